// Package cli is the hopper command: its subcommands, flags, environment
// fallbacks and exit codes. It is kept out of the library's packages: queue,
// worker and report know nothing of command lines.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/attempt"
	"github.com/hopper-queue/hopper/report"
)

// Exit codes (docs/cli.md#exit-codes): the report's, which is where they
// are defined once.
const (
	exitOK             = report.ExitOK
	exitTestFailure    = report.ExitTestFailure
	exitInfrastructure = report.ExitInfrastructure
	exitIncomplete     = report.ExitIncomplete
	exitAborted        = report.ExitAborted
)

// Streams are the process's standard files and signals.
type Streams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Signals delivers SIGINT and SIGTERM: the first stops the workers
	// (forwarding the signal to running commands, which get a grace period),
	// the second kills the commands at once. Nil: no signals.
	Signals <-chan os.Signal
	// Terminal is true when Stderr is a terminal, Width its width.
	Terminal bool
	Width    func() int
}

// app is one run of the command.
type app struct {
	ctx  context.Context
	env  Env
	s    Streams
	sup  *attempt.Supervisor
	name string // "hopper work", for messages
}

// exitError ends a command with a code and, unless empty, a message.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func exitf(code int, format string, args ...any) error {
	return exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// exitCode ends a command with a code and no message.
func exitCode(code int) error {
	if code == exitOK {
		return nil
	}
	return exitError{code: code}
}

var commands = map[string]struct {
	run   func(*app, []string) error
	usage string
}{
	"work":    {(*app).work, workUsage},
	"run":     {(*app).run, runUsage},
	"report":  {(*app).report, reportUsage},
	"status":  {(*app).status, statusUsage},
	"events":  {(*app).events, eventsUsage},
	"version": {(*app).version, versionUsage},
}

// Main runs hopper with args (the program name left out) and returns the
// process exit code.
func Main(args []string, env Env, s Streams) int {
	if len(args) == 0 {
		fmt.Fprint(s.Stderr, topUsage)
		return exitInfrastructure
	}
	name, rest := args[0], args[1:]
	switch name {
	case "--version", "-version":
		name = "version"
	case "-h", "--help", "help":
		if len(rest) > 0 {
			// The help of a misspelled command is refused as the command
			// itself would be, rather than answered with the general help
			// and exit 0 as though it had been found.
			c, ok := commands[rest[0]]
			if !ok {
				return unknownCommand(s, rest[0])
			}
			fmt.Fprint(s.Stdout, c.usage)
			return exitOK
		}
		fmt.Fprint(s.Stdout, topUsage)
		return exitOK
	}
	c, ok := commands[name]
	if !ok {
		return unknownCommand(s, name)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &app{ctx: ctx, env: env, s: s, sup: attempt.NewSupervisor(), name: "hopper " + name}
	if s.Signals != nil {
		go func() {
			n := 0
			for sig := range s.Signals {
				n++
				if n == 1 {
					if ss, ok := sig.(syscall.Signal); ok {
						a.sup.Stop(ss)
					} else {
						a.sup.Stop(syscall.SIGTERM)
					}
					cancel()
					continue
				}
				a.sup.Kill()
			}
		}()
	}

	err := c.run(a, rest)
	var usage usageError
	var exit exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		fmt.Fprint(s.Stdout, c.usage)
		return exitOK
	case errors.As(err, &usage):
		fmt.Fprintf(s.Stderr, "%s: %s\nRun '%s --help' for usage.\n", a.name, oneLine(usage.msg), a.name)
		return exitInfrastructure
	case errors.As(err, &exit):
		if exit.msg != "" {
			fmt.Fprintf(s.Stderr, "%s: %s\n", a.name, redisAdvice(exit.msg))
		}
		return exit.code
	}
	fmt.Fprintf(s.Stderr, "%s: %s\n", a.name, redisAdvice(oneLine(err.Error())))
	return exitInfrastructure
}

// unknownCommand refuses a command hopper does not have: one line and
// exit 2.
func unknownCommand(s Streams, name string) int {
	fmt.Fprintf(s.Stderr, "hopper: unknown command %q\nRun 'hopper --help' for usage.\n", name)
	return exitInfrastructure
}

// interrupted reports whether the user stopped the command.
func (a *app) interrupted() bool { return a.ctx.Err() != nil }

// oneLine keeps a message on one line: the command's errors are read in CI
// logs, one per line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// noArguments refuses positional arguments and a command after "--".
// parseTarget parses the flags of a command that takes nothing else (report,
// status, events) and resolves the build and the Redis it is aimed at.
func (a *app) parseTarget(f *flagSet, tf targetFlags, args []string) (target, error) {
	positional, command, err := f.Parse(args)
	if err != nil {
		return target{}, err
	}
	if err := noArguments(positional, command); err != nil {
		return target{}, err
	}
	return tf.resolve(f, a.env, true)
}

func noArguments(positional, command []string) error {
	if len(positional) > 0 {
		return usagef("unexpected argument %q", positional[0])
	}
	if command != nil {
		return usagef("unexpected command after --")
	}
	return nil
}
