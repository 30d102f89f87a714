package cli

import (
	"bufio"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// followInterval is how often --follow looks for new events.
const followInterval = 300 * time.Millisecond

// events is `hopper events`.
func (a *app) events(args []string) error {
	f := newFlagSet("events")
	tf := addTargetFlags(f)
	follow := f.Bool("follow")
	f.fs.BoolFunc("f", "", func(string) error { *follow = true; return nil })
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
	last := "-"
	read := func() (int, error) {
		n := 0
		for {
			entries, err := client.Do(a.ctx, client.B().Xrange().Key(keys.Attempts).Start(last).End("+").Count(1000).Build()).AsXRange()
			if err != nil {
				return n, err
			}
			for _, e := range entries {
				out.WriteString(e.FieldValues["json"])
				out.WriteByte('\n')
				last = "(" + e.ID
			}
			n += len(entries)
			if len(entries) < 1000 {
				return n, out.Flush()
			}
		}
	}
	n, err := read()
	if err != nil {
		return a.readErr(t.BuildID, err)
	}
	if !*follow {
		if n == 0 {
			if ok, err := a.buildExists(client, keys); err != nil {
				return a.readErr(t.BuildID, err)
			} else if !ok {
				return exitf(exitInfrastructure, "build %s not found (never published, or not yet)", t.BuildID)
			}
		}
		return nil
	}
	for {
		select {
		case <-a.ctx.Done():
			return nil
		case <-time.After(followInterval):
		}
		// Complete is read before the log, so that the events of the last
		// finalize are printed before stopping.
		complete, err := a.complete(client, keys)
		if err != nil && a.interrupted() {
			return nil
		}
		if err != nil {
			return a.readErr(t.BuildID, err)
		}
		if _, err := read(); err != nil {
			if a.interrupted() {
				return nil
			}
			return a.readErr(t.BuildID, err)
		}
		if complete {
			return nil
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

// complete reports whether every unit of the build is finalized.
func (a *app) complete(client rueidis.Client, keys queue.Keys) (bool, error) {
	vals, err := client.Do(a.ctx, client.B().Hmget().Key(keys.Meta).Field("finalized_count", "total_units", "state").Build()).ToArray()
	if err != nil || len(vals) != 3 {
		return false, err
	}
	fin, _ := vals[0].AsInt64()
	total, err := vals[1].AsInt64()
	if err != nil {
		return false, nil // not published yet
	}
	state, _ := vals[2].ToString()
	return state != "ready" || fin >= total, nil
}
