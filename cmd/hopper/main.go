// Command hopper runs a test suite's units across workers through Redis
// Streams: `hopper run` on one machine, `hopper work` on each CI machine and
// `hopper report` for the verdict. Run `hopper --help`.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/cli"
	"github.com/hopper-queue/hopper/cmd/hopper/internal/console"
)

func main() {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	os.Exit(cli.Main(os.Args[1:], cli.OSEnv(), cli.Streams{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Signals:  signals,
		Terminal: console.IsTerminal(os.Stderr),
		Width:    func() int { return console.Width(os.Stderr) },
	}))
}
