package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/hopper-queue/hopper/report"
)

// waitFlag is hopper report's --wait: how long to wait for the build to
// complete. It used to be --timeout, which on hopper work and hopper run
// is the silence before a unit is reclaimed: one name had two meanings.
// --timeout stays on report as a deprecated alias that warns.
type waitFlag struct {
	wait, timeout *string
}

func addWaitFlag(f *flagSet) waitFlag {
	def := secondsText(report.DefaultTimeout)
	return waitFlag{wait: f.String("wait", def), timeout: f.String("timeout", def)}
}

// resolve reads the wait from whichever name was given, refuses both at
// once, and warns on stderr when the old name was used.
func (w waitFlag) resolve(f *flagSet, c *checks, dst *time.Duration, stderr io.Writer, cmd string) {
	if c.err != nil {
		return
	}
	if !f.Given("timeout") {
		c.seconds(dst, "wait", *w.wait)
		return
	}
	if f.Given("wait") {
		c.err = usagef("--timeout is the old name of --wait: give --wait alone")
		return
	}
	c.seconds(dst, "timeout", *w.timeout)
	fmt.Fprintf(stderr, "%s: warning: --timeout is deprecated on hopper report: use --wait (on work and run, --timeout is the silence before a unit is reclaimed)\n", cmd)
}
