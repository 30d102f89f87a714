package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/redis/rueidis"
)

// openRound opens round r+1 of the build from its complete round r, in one
// transaction watching the build's meta, round r's and round r+1's: it
// commits only while the build's latest round is still r, so that of many
// workers arriving at once exactly one opens it (the others get
// errAborted and look again). A lost reply is errAborted too: the next
// look finds the round opened, or not. A round r that passed opens
// nothing: Entered is round r.
func (b *Build) openRound(ctx context.Context, worker string, r int, sig RetrySignal) (Entered, error) {
	cur, err := b.round(r)
	if err != nil {
		return Entered{}, err
	}
	next := RoundKeys(b.schema.buildName(), r+1)
	// Round r is complete: its part of the log is final.
	evs, err := b.readLog(ctx)
	if err != nil {
		return Entered{}, err
	}
	var out Entered
	err = b.client.Dedicated(func(c rueidis.DedicatedClient) error {
		var err error
		out, err = b.openRoundOnce(dedicatedContext(ctx), c, worker, cur.schema.keys, next, evs, sig)
		return err
	})
	return out, err
}

func (b *Build) openRoundOnce(ctx context.Context, c rueidis.DedicatedClient, worker string, cur, next Keys, evs []events.Event, sig RetrySignal) (Entered, error) {
	r := cur.Round()
	res := c.DoMulti(ctx,
		c.B().Watch().Key(b.schema.keys.Meta, cur.Meta, next.Meta).Build(),
		c.B().Hgetall().Key(b.schema.keys.Meta).Build(),
		c.B().Hgetall().Key(cur.Meta).Build(),
		c.B().Exists().Key(next.Meta).Build(),
		c.B().Time().Build())
	if err := res[0].Error(); err != nil {
		return Entered{}, err
	}
	base, err1 := res[1].AsStrMap()
	meta, err2 := res[2].AsStrMap()
	taken, err3 := res[3].AsInt64()
	now, err4 := machinery.ParseTime(res[4])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		unwatch(c)
		return Entered{}, err
	}
	latest := 1
	if v, ok := base[metaRound]; ok {
		var err error
		if latest, err = parseRound(v); err != nil {
			unwatch(c)
			return Entered{}, err
		}
	}
	if latest != r || taken == 1 || !roundComplete(meta) {
		unwatch(c)
		return Entered{}, errAborted // moved since the look: look again
	}
	ids, err := unitIDsOf(meta)
	if err != nil {
		unwatch(c)
		return Entered{}, err
	}
	units := RoundUnits(ids, evs, r)
	if len(units) == 0 {
		unwatch(c)
		return Entered{Round: r}, nil // it passed: nothing to run again
	}
	ev, err := events.RoundOpened{Round: r + 1, WorkerID: worker, UnitIDs: units, AtMS: now}.Encode()
	if err != nil {
		unwatch(c)
		return Entered{}, err
	}
	cmds := b.schema.roundCommands(c, base, cur, next, units, now, sig, ev)
	ambiguous, err := execOutcome(c.DoMulti(ctx, cmds...), "round opening")
	if ambiguous {
		return Entered{}, errAborted
	}
	if err != nil {
		return Entered{}, err
	}
	return Entered{Round: r + 1, Opened: true, Units: units}, nil
}

// roundCommands lays round next out as Publish lays out a build: its
// streams with the consumer group at 0, its units in order with zeroed
// states, its meta; and points the build's meta at it, logs round_opened,
// and gives every key of the build, the previous round's and the new
// round's the build's TTL.
func (sc *schema) roundCommands(c rueidis.DedicatedClient, base map[string]string, cur, next Keys, units []string, now int64, sig RetrySignal, ev []byte) rueidis.Commands {
	cmds := rueidis.Commands{c.B().Multi().Build(),
		c.B().Hset().Key(sc.keys.Meta).FieldValue().FieldValue(metaRound, strconv.Itoa(next.Round())).Build(),
		c.B().Del().Key(next.Units, next.Priority, next.UnitState, next.Workers).Build(),
	}
	for _, s := range []string{next.Units, next.Priority} {
		cmds = append(cmds, c.B().XgroupCreate().Key(s).Group(Group).Id("0").Mkstream().Build())
	}
	for _, id := range units {
		cmds = append(cmds, c.B().Xadd().Key(next.Units).Id("*").FieldValue().FieldValue("id", id).FieldValue("type", base[metaUnitType]).Build())
	}
	zero := string(budget.State{}.Encode())
	for start := 0; start < len(units); start += unitsPerHSET {
		set := c.B().Hset().Key(next.UnitState).FieldValue()
		for _, id := range units[start:min(start+unitsPerHSET, len(units))] {
			set = set.FieldValue(id, zero)
		}
		cmds = append(cmds, set.Build())
	}
	metaSet := c.B().Hset().Key(next.Meta).FieldValue()
	for f, v := range roundMetaFields(base, next.Round(), units, now, sig) {
		metaSet = metaSet.FieldValue(f, v)
	}
	cmds = append(cmds, metaSet.Build(),
		c.B().Xadd().Key(sc.keys.Attempts).Id("*").FieldValue().FieldValue("json", string(ev)).Build())
	seen := map[string]bool{}
	for _, k := range []Keys{sc.keys, cur, next} {
		live := k.live()
		for _, key := range append(live[:], k.testResultsKey()) {
			if !seen[key] {
				seen[key] = true
				cmds = append(cmds, c.B().Pexpire().Key(key).Milliseconds(sc.ttlMS).Build())
			}
		}
	}
	return append(cmds, c.B().Exec().Build())
}

// readLog reads the build's whole attempt log, a page at a time.
func (b *Build) readLog(ctx context.Context) ([]events.Event, error) {
	const page = 1000
	var out []events.Event
	start := "-"
	for {
		rctx, cancel := boundedRead(ctx, readTimeout)
		entries, err := b.client.Do(rctx, b.client.B().Xrange().Key(b.schema.keys.Attempts).Start(start).End("+").Count(page).Build()).AsXRange()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("queue: reading %s: %w", b.schema.keys.Attempts, err)
		}
		for _, e := range entries {
			ev, err := events.Decode([]byte(e.FieldValues["json"]))
			if err != nil {
				return nil, fmt.Errorf("%w: attempts entry %s: %v", ErrCorrupt, e.ID, err)
			}
			out = append(out, ev)
		}
		if len(entries) < page {
			return out, nil
		}
		start = "(" + entries[len(entries)-1].ID
	}
}
