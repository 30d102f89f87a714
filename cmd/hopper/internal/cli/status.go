package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/console"
	"github.com/hopper-queue/hopper/cmd/hopper/internal/live"
)

// status is `hopper status`.
func (a *app) status(args []string) error {
	f := newFlagSet("status")
	tf := addTargetFlags(f)
	once := f.Bool("once")
	interval := f.String("interval", "1")
	t, err := a.parseTarget(f, tf, args)
	if err != nil {
		return err
	}
	every, err := positiveSeconds("interval", *interval)
	if err != nil {
		return err
	}
	if err := t.needRedis(); err != nil {
		return err
	}
	client, err := a.connect(t)
	if err != nil {
		return err
	}
	defer client.Close()

	watch := !*once && isTerminal(a.s.Stdout) && a.env["TERM"] != "dumb"
	if !watch {
		a.announce(t)
	}
	tracker := live.NewTracker(client, t.BuildID)
	if watch {
		fmt.Fprint(a.s.Stdout, "\x1b[2J") // a clean screen to redraw on
	}
	for {
		s, err := tracker.Poll(a.ctx)
		switch {
		case a.interrupted():
			return nil
		case errors.Is(err, live.ErrNoBuild) && watch:
			// Not published yet: show that, and keep looking.
		case errors.Is(err, live.ErrNoBuild):
			return exitf(exitInfrastructure, "build %s not found (never published, or not yet)", t.BuildID)
		case err != nil:
			return exitf(exitInfrastructure, "reading build %s: %s", t.BuildID, oneLine(err.Error()))
		}
		var b strings.Builder
		if watch {
			// The screen is redrawn: the Redis is named on its first line.
			fmt.Fprintf(&b, "%s: on Redis %s\n", a.name, t.redisShown())
		}
		_ = live.WriteStatus(&b, s)
		if watch {
			// Home, draw, erase what is left of the previous view. The
			// view is cut to the screen, read at every redraw as it may be
			// resized: one that scrolled could not be redrawn in place.
			f := a.s.Stdout.(*os.File) // isTerminal said so
			view := console.Fit(b.String(), console.Width(f), console.Height(f))
			fmt.Fprint(a.s.Stdout, "\x1b[H"+strings.ReplaceAll(view, "\n", "\x1b[K\n")+"\x1b[J")
		} else {
			fmt.Fprint(a.s.Stdout, b.String())
		}
		if !watch || s.Complete() || s.Gone || (s.Published && s.State != "ready") {
			return nil
		}
		select {
		case <-a.ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// isTerminal reports whether w, where status draws its view, is a terminal.
// It asks of standard output itself, not of standard error (which is what
// Streams.Terminal tells): `hopper status > file` or `| grep` from a
// terminal must print one snapshot and end, not redraw escape codes into the
// file until the build completes.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && console.IsTerminal(f)
}
