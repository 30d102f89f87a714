package cli

import (
	"bufio"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// followInterval is how often --follow looks for new events.
const followInterval = 300 * time.Millisecond

// events is `hopper events`.
func (a *app) events(args []string) error {
	f := newFlagSet("events")
	tf := addTargetFlags(f)
	follow := f.Bool("follow", "f")
	t, err := a.parseTarget(f, tf, args)
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
	a.announce(t)
	defer client.Close()

	build, err := queue.Open(client, t.BuildID, queue.Options{})
	if err != nil {
		return usagef("%v", err)
	}
	out := bufio.NewWriter(a.s.Stdout)
	defer out.Flush()
	lp := &logPrinter{a: a, build: build, out: out}
	n, err := lp.read()
	if err != nil {
		return a.readErr(t.BuildID, err)
	}
	if !*follow {
		if n == 0 {
			return a.emptyLog(build, t.BuildID)
		}
		return nil
	}
	return a.followLog(build, t.BuildID, lp)
}

// logPrinter prints a build's attempt log, one event a line, from where it
// left off.
type logPrinter struct {
	a     *app
	build *queue.Build
	out   *bufio.Writer
	last  string // the id of the last entry printed; "": none yet
	// round is the latest retry round of the events printed (a
	// round_opened event carries the round it opens).
	round int
}

// read prints the entries logged since the last read, and counts them.
func (lp *logPrinter) read() (int, error) {
	n := 0
	err := lp.build.ReadAttemptsAfter(lp.a.ctx, lp.last, func(id, raw string, _ bool) error {
		lp.out.WriteString(raw)
		lp.out.WriteByte('\n')
		if ev, err := events.Decode([]byte(raw)); err == nil {
			lp.round = max(lp.round, ev.RoundOf())
		}
		lp.last = id
		n++
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, lp.out.Flush()
}

// emptyLog tells why a build's log, read without --follow, is empty: the
// build was never published, or it is gone; a build just published has
// logged nothing yet.
func (a *app) emptyLog(build *queue.Build, buildID string) error {
	if p, err := build.ReadPresence(a.ctx); err != nil {
		return a.readErr(buildID, err)
	} else if len(p.Meta) == 0 && !p.Tombstone {
		return exitf(exitInfrastructure, "build %s not found (never published, or not yet)", buildID)
	}
	if st, _, err := a.followDone(build); err != nil {
		return a.readErr(buildID, err)
	} else if st == followGone {
		return errGone(buildID)
	}
	return nil
}

// followLog prints the log's new events until the build's latest round is
// complete or the build is gone, or the command is interrupted. A round
// that opened between the look at meta and the read of the log shows in the
// log as round_opened: it is followed too (see docs/design.md#rounds).
func (a *app) followLog(build *queue.Build, buildID string, lp *logPrinter) error {
	for {
		select {
		case <-a.ctx.Done():
			return nil
		case <-time.After(followInterval):
		}
		// Whether the build is done is read before the log, so that the
		// events of the last finalize are printed before stopping.
		done, round, err := a.followDone(build)
		if err != nil && a.interrupted() {
			return nil
		}
		if err != nil {
			return a.readErr(buildID, err)
		}
		if _, err := lp.read(); err != nil {
			if a.interrupted() {
				return nil
			}
			return a.readErr(buildID, err)
		}
		switch {
		case done == followComplete && lp.round <= round:
			return nil
		case done == followGone:
			return errGone(buildID)
		}
	}
}

func (a *app) readErr(buildID string, err error) error {
	if a.interrupted() {
		return nil
	}
	return exitf(exitInfrastructure, "reading build %s: %s", buildID, oneLine(err.Error()))
}

// errGone says that the build's state, its log with it, expired or was
// evicted: exit 3, as the report's verdict "expired".
func errGone(buildID string) error {
	return exitf(exitIncomplete, "build %s is gone (its state expired or was evicted); its log went with it", buildID)
}

// followState is what one look at a followed build says about going on.
type followState int

const (
	followOn       followState = iota // running, or not published yet: keep following
	followComplete                    // every unit finalized, or publishing failed: nothing more to wait for
	followGone                        // published once, its state now gone: it can never complete
)

// followDone reads the latest round's state and counts and the tombstone
// (queue.Build.ReadCompletion), and says which round it judged. A build
// whose meta is gone while its tombstone lives has expired or been
// evicted: its log went with it and no unit will ever be finalized, so
// following it further would wait for ever. A round whose counts are not
// counts, or a malformed round, is an error: it could never be read as
// complete.
func (a *app) followDone(build *queue.Build) (followState, int, error) {
	c, err := build.ReadCompletion(a.ctx)
	if err != nil {
		return followOn, 0, err
	}
	switch {
	case !c.Published && c.Tombstone:
		return followGone, c.Round, nil
	case !c.Published:
		return followOn, c.Round, nil // not published yet
	case c.State != string(queue.StateReady), c.Finalized >= c.Total:
		return followComplete, c.Round, nil
	}
	return followOn, c.Round, nil
}
