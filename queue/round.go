package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/redis/rueidis"
)

// A retry round runs again, as part of the same build, the units of a
// complete build that did not pass (see docs/design.md#rounds). Round 1 is
// the build as published. Round n >= 2 has keys of its own under the
// build's hash tag (hopper:{<build>}:round:<n>:units, ...): fresh streams,
// unit states, meta counts and budgets, and fresh guards, so that every
// transition and its exactly-once rules hold within the round unchanged.
// The rounds share the build's attempt log, where each event of round 2
// and later carries "round", and the build's meta records the latest round
// in "round".

// metaRound is the field of the build's meta naming its latest round;
// metaCIPrefix starts the fields of a round's meta that record, per CI job
// slot, the attempt of that job that took part in the round.
const (
	metaRound    = "round"
	metaCIPrefix = "ci:"
)

// RoundKeys returns the keys of round n of build buildID: BuildKeys for
// round 1 (or less).
func RoundKeys(buildID string, n int) Keys {
	k := BuildKeys(buildID)
	if n <= 1 {
		return k
	}
	base := "hopper:{" + buildID + "}:"
	p := base + "round:" + strconv.Itoa(n) + ":"
	return Keys{
		Units: p + "units", Priority: p + "units:priority", Attempts: k.Attempts,
		Meta: p + "meta", UnitState: p + "unit_state", Workers: p + "workers",
		Leader: k.Leader, Exists: k.Exists,
		prefix: fence.SlotPrefix(p + "units"), round: n, baseMeta: k.Meta,
	}
}

// OfRound returns the keys of round n of the build whose keys (of any
// round) k are: for readers that found the build's latest round in its
// meta ("round").
func (k Keys) OfRound(n int) Keys {
	meta := k.Meta
	if k.baseMeta != "" {
		meta = k.baseMeta
	}
	i, j := strings.IndexByte(meta, '{'), strings.IndexByte(meta, '}')
	if i < 0 || j <= i+1 {
		return k // not a build's layout: it has no rounds
	}
	return RoundKeys(meta[i+1:j], n)
}

// Round returns the round these keys are of: 1 for the build's own.
func (k Keys) Round() int { return max(k.round, 1) }

// RetrySignal is what tells a worker arriving at a complete build whether
// it is a retry (see Build.EnterRound).
type RetrySignal struct {
	// Slot names the CI job this worker runs as, the same on each of the
	// job's retries (GitLab: CI_JOB_NAME; Buildkite: step and parallel
	// job; GitHub Actions: the run); Attempt is which try of that job this
	// is (CI_JOB_ID, BUILDKITE_RETRY_COUNT, GITHUB_RUN_ATTEMPT). Both
	// empty outside a known CI.
	Slot, Attempt string
	// Force makes the worker a retry whatever its CI says (--retry-failed).
	Force bool
}

// Entered is the round a worker works in.
type Entered struct {
	Round int
	// Opened is true when this worker opened the round; Units are then
	// the units it runs again.
	Opened bool
	Units  []string
}

// EnterRound finds the round worker must work in, opening a new one when
// the build's latest round is complete and did not pass and sig says this
// worker is a retry: sig.Force, or the latest round recorded sig.Slot with
// another attempt than sig.Attempt (the same CI job, run again). A worker
// whose slot the latest round never recorded belongs to the wave that
// opened it (or came late to it), and joins it. The round opened holds the
// units of the latest round whose last finalized event there is not
// passed, or that have none; a round that passed opens nothing. Opening is
// one WATCH/MULTI/EXEC over the build's meta and the latest round's: of
// workers arriving at once, one opens the round and the others join it.
// The worker's slot and attempt are recorded in the round it enters.
func (b *Build) EnterRound(ctx context.Context, worker string, sig RetrySignal) (Entered, error) {
	for n := 1; ; n++ {
		latest, rb, meta, err := b.latest(ctx)
		if err != nil {
			return Entered{}, err
		}
		retry := sig.Force || (sig.Slot != "" && meta[metaCIPrefix+sig.Slot] != "" && meta[metaCIPrefix+sig.Slot] != sig.Attempt)
		if !roundComplete(meta) || !retry {
			return Entered{Round: latest}, rb.recordCI(ctx, sig)
		}
		e, err := b.openRound(ctx, worker, latest, sig)
		if !errors.Is(err, errAborted) {
			return e, err
		}
		if n >= b.opts.MaxAttempts {
			return Entered{}, fmt.Errorf("%w after %d attempts to open a round", ErrContention, n)
		}
	}
}

// round returns the Build of round n, sharing b's client and options.
func (b *Build) round(n int) (*Build, error) {
	if n <= 1 {
		return b, nil
	}
	return OpenKeys(b.client, RoundKeys(b.schema.buildName(), n), b.opts)
}

// Round returns the Build of round n of this build (b itself for round 1),
// on which a worker of that round runs every transition.
func (b *Build) Round(n int) (*Build, error) { return b.round(n) }

// latest reads the build's meta and, when the build has rounds, its
// latest round's: that round, its Build and its meta.
func (b *Build) latest(ctx context.Context) (int, *Build, map[string]string, error) {
	meta, err := b.readMeta(ctx)
	if err != nil {
		return 0, nil, nil, err
	}
	v, ok := meta[metaRound]
	if !ok {
		return 1, b, meta, nil
	}
	n, err := parseRound(v)
	if err != nil {
		return 0, nil, nil, err
	}
	rb, err := b.round(n)
	if err != nil {
		return 0, nil, nil, err
	}
	if n > 1 {
		meta, err = rb.readMeta(ctx)
	}
	return n, rb, meta, err
}

// roundComplete tells from a round's meta that every unit of it is
// finalized (see Progress).
func roundComplete(meta map[string]string) bool {
	fin, err1 := strconv.ParseInt(meta[metaFinalized], 10, 64)
	total, err2 := strconv.ParseInt(meta[metaTotalUnits], 10, 64)
	return err1 == nil && err2 == nil && fin >= total
}

// MetaRound returns the latest round a build's meta names: 1 when it has
// none (a build never retried). Observers read that round's keys
// (Keys.OfRound) to show the build as it now runs.
func MetaRound(meta map[string]string) (int, error) {
	v, ok := meta[metaRound]
	if !ok {
		return 1, nil
	}
	return parseRound(v)
}

func parseRound(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: meta round %q is not a round number", ErrCorrupt, v)
	}
	return n, nil
}

func (b *Build) readMeta(ctx context.Context) (map[string]string, error) {
	ctx, cancel := boundedRead(ctx, readTimeout)
	defer cancel()
	m, err := b.client.Do(ctx, b.client.B().Hgetall().Key(b.schema.keys.Meta).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("queue: reading %s: %w", b.schema.keys.Meta, err)
	}
	return m, nil
}

// recordCI notes in the round's meta which attempt of the worker's CI job
// took part in it.
func (b *Build) recordCI(ctx context.Context, sig RetrySignal) error {
	if sig.Slot == "" {
		return nil
	}
	c := b.client
	return c.Do(ctx, c.B().Hset().Key(b.schema.keys.Meta).FieldValue().FieldValue(metaCIPrefix+sig.Slot, sig.Attempt).Build()).Error()
}

// RoundUnits returns the units of round r that did not pass there: those
// whose last finalized event of round r is not passed, or that have none,
// in manifest order. evs is the build's attempt log.
func RoundUnits(manifest []string, evs []events.Event, r int) []string {
	last := make(map[string]string, len(manifest))
	for _, e := range evs {
		if e.Type == events.TypeFinalized && e.UnitID != nil && e.RoundOf() == r {
			last[*e.UnitID] = e.Outcome
		}
	}
	var out []string
	for _, u := range manifest {
		if last[u] != events.OutcomePassed {
			out = append(out, u)
		}
	}
	return out
}

// unitIDsOf reads a meta's unit_ids.
func unitIDsOf(meta map[string]string) ([]string, error) {
	var ids []string
	if err := json.Unmarshal([]byte(meta[metaUnitIDs]), &ids); err != nil {
		return nil, fmt.Errorf("%w: meta unit_ids %.80q: %v", ErrCorrupt, meta[metaUnitIDs], err)
	}
	return ids, nil
}

// roundMetaFields is the new round's meta: the build's fields (its
// budgets, fingerprint, unit type: the same suite, with fresh budgets),
// with the round's own units, counts and state.
func roundMetaFields(base map[string]string, round int, units []string, now int64, sig RetrySignal) map[string]string {
	f := make(map[string]string, len(base)+4)
	for k, v := range base {
		if !strings.HasPrefix(k, metaCIPrefix) {
			f[k] = v
		}
	}
	delete(f, metaTotalExamples) // of the whole suite: the round's are its units
	f[metaState] = stateReady
	f[metaTotalUnits] = strconv.Itoa(len(units))
	f[metaUnitIDs] = string(jsonValue(units))
	f[metaFinalized], f[metaRequeuedUnits] = "0", "0"
	f[metaReadyAt] = strconv.FormatInt(now, 10)
	f[metaRound] = strconv.Itoa(round)
	if sig.Slot != "" {
		f[metaCIPrefix+sig.Slot] = sig.Attempt
	}
	return f
}

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
