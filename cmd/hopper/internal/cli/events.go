package cli

import (
	"bufio"
	"fmt"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
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
	defer client.Close()

	keys := queue.BuildKeys(t.BuildID)
	out := bufio.NewWriter(a.s.Stdout)
	defer out.Flush()
	lp := &logPrinter{a: a, client: client, keys: keys, out: out, last: "-"}
	n, err := lp.read()
	if err != nil {
		return a.readErr(t.BuildID, err)
	}
	if !*follow {
		if n == 0 {
			return a.emptyLog(client, keys, t.BuildID)
		}
		return nil
	}
	return a.followLog(client, keys, t.BuildID, lp)
}

// logPrinter prints a build's attempt log, one event a line, from where it
// left off.
type logPrinter struct {
	a      *app
	client rueidis.Client
	keys   queue.Keys
	out    *bufio.Writer
	last   string // the XRANGE start of the next read
	// round is the latest retry round of the events printed (a
	// round_opened event carries the round it opens).
	round int
}

// read prints the entries logged since the last read, and counts them.
func (lp *logPrinter) read() (int, error) {
	client := lp.client
	n := 0
	for {
		entries, err := client.Do(lp.a.ctx, client.B().Xrange().Key(lp.keys.Attempts).Start(lp.last).End("+").Count(1000).Build()).AsXRange()
		if err != nil {
			return n, err
		}
		for _, e := range entries {
			raw := e.FieldValues["json"]
			lp.out.WriteString(raw)
			lp.out.WriteByte('\n')
			if ev, err := events.Decode([]byte(raw)); err == nil {
				lp.round = max(lp.round, ev.RoundOf())
			}
			lp.last = "(" + e.ID
		}
		n += len(entries)
		if len(entries) < 1000 {
			return n, lp.out.Flush()
		}
	}
}

// emptyLog tells why a build's log, read without --follow, is empty: the
// build was never published, or it is gone; a build just published has
// logged nothing yet.
func (a *app) emptyLog(client rueidis.Client, keys queue.Keys, buildID string) error {
	if ok, err := a.buildExists(client, keys); err != nil {
		return a.readErr(buildID, err)
	} else if !ok {
		return exitf(exitInfrastructure, "build %s not found (never published, or not yet)", buildID)
	}
	if st, _, err := a.followDone(client, keys); err != nil {
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
func (a *app) followLog(client rueidis.Client, keys queue.Keys, buildID string, lp *logPrinter) error {
	for {
		select {
		case <-a.ctx.Done():
			return nil
		case <-time.After(followInterval):
		}
		// Whether the build is done is read before the log, so that the
		// events of the last finalize are printed before stopping.
		done, round, err := a.followDone(client, keys)
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

func (a *app) buildExists(client rueidis.Client, keys queue.Keys) (bool, error) {
	n, err := client.Do(a.ctx, client.B().Exists().Key(keys.Meta, keys.Exists).Build()).AsInt64()
	return n > 0, err
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

// followDone reads the latest round's meta and the tombstone, and says
// which round it judged. A build whose meta is gone while its tombstone
// lives has expired or been evicted: its log went with it and no unit will
// ever be finalized, so following it further would wait for ever.
func (a *app) followDone(client rueidis.Client, keys queue.Keys) (followState, int, error) {
	keys, err := a.latestRound(client, keys)
	if err != nil {
		return followOn, 0, err
	}
	st, err := a.roundDone(client, keys)
	return st, keys.Round(), err
}

// roundDone reads one round's meta and the tombstone in one round trip.
func (a *app) roundDone(client rueidis.Client, keys queue.Keys) (followState, error) {
	res := client.DoMulti(a.ctx,
		client.B().Hmget().Key(keys.Meta).Field("finalized_count", "total_units", "state").Build(),
		client.B().Exists().Key(keys.Exists).Build())
	vals, err := res[0].ToArray()
	if err != nil {
		return followOn, err
	}
	tomb, err := res[1].AsInt64()
	if err != nil {
		return followOn, err
	}
	if len(vals) != 3 {
		return followOn, fmt.Errorf("HMGET %s replied %d values, want 3", keys.Meta, len(vals))
	}
	state, err := vals[2].ToString()
	if err != nil { // no state: meta is not there (or not a publisher's)
		if tomb == 1 {
			return followGone, nil
		}
		return followOn, nil // not published yet
	}
	if state != "ready" {
		return followComplete, nil
	}
	// A ready build's counts are the publisher's and the finalizers'
	// whole numbers. One that is missing or not a count can never be read
	// as complete: following on would wait for ever.
	total, err := vals[1].AsInt64()
	if err != nil {
		raw, _ := vals[1].ToString()
		return followOn, fmt.Errorf("meta %s is ready but its total_units %q is not a count: the build is corrupt", keys.Meta, raw)
	}
	var fin int64
	if !vals[0].IsNil() {
		if fin, err = vals[0].AsInt64(); err != nil {
			raw, _ := vals[0].ToString()
			return followOn, fmt.Errorf("meta %s is ready but its finalized_count %q is not a count: the build is corrupt", keys.Meta, raw)
		}
	}
	if fin >= total {
		return followComplete, nil
	}
	return followOn, nil
}
