package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// ReclaimStatus says what a reclaim did.
type ReclaimStatus int

const (
	// ReclaimNone: no entry had been idle for the timeout.
	ReclaimNone ReclaimStatus = iota
	// ReclaimTaken: the worker now holds an entry taken from an idle owner.
	ReclaimTaken
	// ReclaimFinalized: the idle unit had used up its reclaim budget and was
	// finalized as failed (reason reclaim_budget_exhausted).
	ReclaimFinalized
)

// Reclaimed is the outcome of Reclaim.
type Reclaimed struct {
	Status ReclaimStatus
	// Reservation is the worker's new hold, when Status is ReclaimTaken.
	Reservation Reservation
	// UnitID is the unit taken or finalized.
	UnitID string
	// PreviousWorkerID is the owner the entry was taken from, when known.
	PreviousWorkerID string

	typeMissing bool // the entry has no type field (Transition's reply stops there)
}

// streamScan is one unit stream's pending list as a reclaim sees it.
type streamScan struct {
	stream Stream
	cand   fence.Row // first entry idle for the timeout, anywhere in the list
	hasCnd bool
	window []fence.Row // the first fence.ScanWindow pending entries

	// The stream's max-deleted-entry-id, when the server reports one: no
	// pending entry above it can have been deleted.
	maxDeletedMS, maxDeletedSeq uint64
	knowsDeleted                bool
}

// mayBeDeleted reports whether row's stream entry might be gone.
func (s streamScan) mayBeDeleted(row fence.Row) bool {
	if !s.knowsDeleted {
		return true
	}
	ms, seq, ok := parseEntryID(row.EntryID)
	if !ok {
		return true
	}
	return ms < s.maxDeletedMS || (ms == s.maxDeletedMS && seq <= s.maxDeletedSeq)
}

// undecided returns the window's entries whose fate the walk cannot know
// without reading the stream: those that might be deleted, up to and
// including the first idle one, where the walk ends either way.
func (s streamScan) undecided(timeoutMS int64) []fence.Row {
	var out []fence.Row
	for _, row := range s.window {
		idle := fence.Idle(row, timeoutMS)
		if idle || s.mayBeDeleted(row) {
			out = append(out, row)
		}
		if idle {
			break
		}
	}
	return out
}

// Reclaim takes over one unit whose owner has gone quiet: the oldest entry
// idle for at least timeout, priority stream first, among the first
// fence.ScanWindow pending entries of each stream (the reach of one
// XAUTOCLAIM). Within the unit's reclaim budget the worker now holds it
// (plain XCLAIM: the delivery count grows, fencing the old owner out) and a
// reclaimed event is appended; past it, the unit is finalized as failed.
//
// ErrCorrupt: meta is missing, or the idle unit's state is. In the second
// case the entry may already have changed hands, as it does in the reference
// when the state goes missing between its check and its claim.
//
// A reclaim that claims takes three round trips when the build has seen the
// entry before (see entry_units.go), four when it has not.
func (b *Build) Reclaim(ctx context.Context, worker string, timeout time.Duration, maxReclaims int) (Reclaimed, error) {
	if err := checkID("worker id", worker); err != nil {
		return Reclaimed{}, err
	}
	if timeout < 0 {
		return Reclaimed{}, errInvalid("reclaim timeout %v is negative", timeout)
	}
	if maxReclaims < 0 {
		return Reclaimed{}, errInvalid("max reclaims %d is negative", maxReclaims)
	}
	return b.reclaim(ctx, worker, timeout.Milliseconds(), float64(maxReclaims))
}

func (b *Build) reclaim(ctx context.Context, worker string, timeoutMS int64, fallbackMax float64) (out Reclaimed, err error) {
	defer func(start time.Time) {
		ok := StatusNone
		switch out.Status {
		case ReclaimTaken:
			ok = StatusOK
		case ReclaimFinalized:
			ok = StatusFinalized
		}
		b.meter.observe(ctx, ModeReclaim, statusOf(err, ok), start)
	}(time.Now())
	var corrupt error
	var consumers []Stream // streams whose group the commit makes worker a consumer of
	wguard := b.keys.workerGuard(worker)
	err = b.commit(ctx, ModeReclaim, wguard, func(ctx context.Context, c rueidis.DedicatedClient, t *txn) (rueidis.Commands, error) {
		out, corrupt, consumers = Reclaimed{}, nil, consumers[:0]
		k := b.keys
		// First look, unwatched: usually nothing is idle and nothing was
		// deleted, and that costs one round trip.
		cmds := append(rueidis.Commands{
			b.metaRead(c),
			c.B().Hget().Key(k.Meta).Field("max_reclaims").Build(),
		}, b.scanCmds(c, timeoutMS)...)
		// Entries an earlier first look found in the pending windows,
		// ranged to learn their units (see entry_units.go).
		learning := b.entries.toRange()
		for _, at := range learning {
			cmds = append(cmds, c.B().Xrange().Key(k.stream(at.stream)).Start(at.id).End(at.id).Build())
		}
		info, probing := b.consumers.probe(c)
		if probing {
			cmds = append(cmds, info)
		}
		first := c.DoMulti(ctx, cmds...)
		if probing {
			b.consumers.learn(first[len(first)-1])
		}
		for i, at := range learning {
			b.entries.learnRanged(at, first[2+scanReplies+i])
		}
		if found, err := b.metaFound(first[0]); err != nil {
			return nil, errUnwatched{err}
		} else if !found {
			return nil, errUnwatched{fmt.Errorf("%w: meta is missing or holds no state (reclaim by %q)", ErrCorrupt, worker)}
		}
		scans, err := parseScans(first[2 : 2+scanReplies])
		if err != nil {
			return nil, errUnwatched{err}
		}
		b.entries.saw(scans)
		// createConsumer stands for the reference's XAUTOCLAIM of a stream
		// in what the consumer group is left holding (see consumer.go).
		createConsumer := func(writes rueidis.Commands, s Stream) rueidis.Commands {
			if cmd, ok := b.consumers.create(c, k, s, worker); ok {
				consumers = append(consumers, s)
				return append(writes, cmd)
			}
			return writes
		}
		// bare sends consumer creations that are all a reclaim writes
		// without a commit: they are idempotent, so they need no guard and
		// no commit token, and the worker's guard is left as it was.
		bare := func(writes rueidis.Commands) (rueidis.Commands, error) {
			if len(writes) == 0 || len(writes) != len(consumers) {
				return writes, nil
			}
			for _, r := range c.DoMulti(ctx, writes...) {
				if err := r.Error(); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}

		looked := map[entryAt]bool{} // entries the second look ranges, and watches
		anyCand := false
		for _, sc := range scans {
			anyCand = anyCand || sc.hasCnd
			for _, row := range sc.undecided(timeoutMS) {
				looked[entryAt{sc.stream, row.EntryID}] = true
			}
		}
		if !anyCand && len(looked) == 0 {
			// Nothing to claim or drop: the reference walked both streams
			// and found nothing, which on some servers still leaves the
			// worker a consumer of both groups. Creating a consumer twice
			// does nothing, so no guard is needed.
			_, err := bare(createConsumer(createConsumer(nil, StreamPriority), StreamUnits))
			return nil, errUnwatched{err}
		}
		maxRaw, maxOK := optionalStringOK(first[1])
		maxReclaims := budget.Frozen(maxRaw, maxOK, fallbackMax)

		// Second look: this is the read the decision stands on. Ranged: the
		// candidates and the entries whose fate the walk must read. Watched:
		// the guards of the candidates and of every entry in the windows,
		// not only of those ranged. Which entry the walk claims, and whether
		// it claims from the priority stream at all, depends on which
		// entries the window holds: a busy entry settled in between lets
		// one past the window into it, which may be idle (the reference,
		// run after that settlement, claims it), and a settlement retires
		// its entry's guard. Only the second look watches that many keys;
		// the first, which usually finds nothing to do, watches none.
		watch := []string{wguard}
		watched := map[entryAt]bool{}
		guard := func(at entryAt) {
			if entryGuards && !watched[at] {
				watched[at] = true
				watch = append(watch, k.entryGuard(at.stream, at.id))
			}
		}
		ranged := make([]entryAt, 0, len(looked)+2)
		for _, sc := range scans {
			if sc.hasCnd {
				at := entryAt{sc.stream, sc.cand.EntryID}
				ranged = append(ranged, at)
				guard(at)
			}
			for _, row := range sc.window {
				guard(entryAt{sc.stream, row.EntryID})
			}
		}
		for at := range looked {
			ranged = append(ranged, at)
			guard(at)
		}
		cmds = rueidis.Commands{c.B().Watch().Key(watch...).Build()}
		cmds = append(cmds, b.scanCmds(c, timeoutMS)...)
		for _, at := range ranged {
			cmds = append(cmds, c.B().Xrange().Key(k.stream(at.stream)).Start(at.id).End(at.id).Build())
		}
		cmds = append(cmds, c.B().Hget().Key(k.Workers).Field(worker).Build(), c.B().Time().Build())
		// The states of the units the claim may stand on, when the entries'
		// units are known: read here, they save the round trip of
		// unitStates. Only idle entries are claimed, and only idle
		// candidates have their state checked.
		var prefetch []string
		for _, at := range ranged {
			if u, ok := b.entries.unit(at); ok && mayClaim(scans, at, timeoutMS) && !slices.Contains(prefetch, u) {
				prefetch = append(prefetch, u)
			}
		}
		if len(prefetch) > 0 {
			cmds = append(cmds, c.B().Hmget().Key(k.UnitState).Field(prefetch...).Build())
		}
		second := c.DoMulti(ctx, cmds...)
		if err := second[0].Error(); err != nil {
			return nil, err
		}
		if scans, err = parseScans(second[1 : 1+scanReplies]); err != nil {
			return nil, err
		}
		if entryGuards && !allWatched(scans, watched) {
			return nil, errRetry // the windows moved before the WATCH: look again
		}
		fields := make(map[entryAt]entryFields, len(ranged))
		pos := 1 + scanReplies
		for _, at := range ranged {
			fields[at] = b.entries.learnRanged(at, second[pos])
			pos++
		}
		prefetched := map[string]string{}
		if len(prefetch) > 0 {
			if prefetched, err = hmgetStates(prefetch, second[pos+2]); err != nil {
				return nil, err
			}
		}
		raw, found, err := optionalString(second[pos])
		if err != nil {
			return nil, err
		}
		// A reclaimer's record that is not JSON fails the reclaim only
		// where the reference's touch_worker would read it: nothing idle
		// (NONE) and a candidate whose state is missing (CORRUPT) come first.
		rec, recErr := parseWorkerRecord(raw, found)
		now, err := nowMS(second[pos+1])
		if err != nil {
			return nil, err
		}

		// Each stream as XAUTOCLAIM ... COUNT 1 walks it: the first pending
		// entry that is deleted from the stream is dropped and ends the walk;
		// the first that is idle is claimed; the rest are passed over. What
		// the second look needs must have been ranged and watched by the
		// first: otherwise the pending lists moved in between, look again.
		type walk struct {
			cand    entryFields
			drop    string // entry id dropped from the pending list
			claim   int    // index in window, or -1
			claimed entryFields
		}
		walks := make([]walk, len(scans))
		var units []string
		for i, sc := range scans {
			w := walk{claim: -1}
			if sc.hasCnd {
				f, ok := fields[entryAt{sc.stream, sc.cand.EntryID}]
				if !ok {
					return nil, errRetry
				}
				w.cand = f
				if f.exists && f.hasID {
					units = append(units, f.id)
				}
			}
			for j, row := range sc.window {
				at := entryAt{sc.stream, row.EntryID}
				idle := fence.Idle(row, timeoutMS)
				if !sc.mayBeDeleted(row) && !idle {
					continue
				}
				if !looked[at] {
					return nil, errRetry
				}
				f := fields[at]
				if !f.exists {
					w.drop = row.EntryID
					break
				}
				if idle {
					w.claim, w.claimed = j, f
					if f.hasID {
						units = append(units, f.id)
					}
					break
				}
			}
			walks[i] = w
		}
		states, err := b.unitStates(ctx, c, units, prefetch, prefetched)
		if err != nil {
			return nil, err
		}

		// Replay the reference's reclaim on what was read.
		var writes rueidis.Commands
		for i, sc := range scans {
			w := walks[i]
			if sc.hasCnd && w.cand.exists && w.cand.hasID {
				if _, ok := states[w.cand.id]; !ok {
					// Refused before ownership moves; earlier streams' drops stand.
					corrupt = fmt.Errorf("%w: unit_state of %q is missing (reclaim of %s %s)", ErrCorrupt, w.cand.id, sc.stream, sc.cand.EntryID)
					return bare(writes)
				}
			}
			writes = createConsumer(writes, sc.stream) // the reference's XAUTOCLAIM of this stream
			if w.drop != "" {
				// XAUTOCLAIM drops an entry deleted from the stream from the
				// pending list, and that ends its walk of this stream.
				writes = append(writes, c.B().Xack().Key(k.stream(sc.stream)).Group(Group).Id(w.drop).Build())
				writes = append(writes, b.dropGuard(c, k.entryGuard(sc.stream, w.drop), t.token)...)
				continue
			}
			if w.claim < 0 {
				continue
			}
			row, f := sc.window[w.claim], w.claimed
			if !f.hasID {
				return nil, fmt.Errorf("queue: %s entry %s has no id field", sc.stream, row.EntryID)
			}
			prev := ""
			if sc.hasCnd && sc.cand.EntryID == row.EntryID {
				prev = sc.cand.Consumer
			}
			dc := row.DeliveryCount + 1
			guard := k.entryGuard(sc.stream, row.EntryID)
			writes = append(writes,
				c.B().Xclaim().Key(k.stream(sc.stream)).Group(Group).Consumer(worker).MinIdleTime("0").Id(row.EntryID).Build(),
				b.setGuard(c, guard, t.token))
			rawState, ok := states[f.id]
			if !ok {
				corrupt = fmt.Errorf("%w: unit_state of %q is missing (reclaimed %s %s)", ErrCorrupt, f.id, sc.stream, row.EntryID)
				return writes, nil
			}
			state, err := budget.DecodeState([]byte(rawState))
			if err != nil {
				return nil, err
			}
			hd := events.Head{UnitID: f.id, WorkerID: worker, RetryIndex: state.RetryIndex, ReclaimCount: state.ReclaimCount, AtMS: now}
			out.UnitID, out.PreviousWorkerID = f.id, prev
			if budget.ReclaimExhausted(state, maxReclaims) {
				ev, err := events.ReclaimBudgetExhausted{
					Head: hd, Stream: string(sc.stream), EntryID: row.EntryID, PreviousWorkerID: prev, DeliveryCount: dc,
				}.Encode()
				if err != nil {
					return nil, err
				}
				out.Status = ReclaimFinalized
				if recErr != nil {
					return nil, recErr
				}
				writes = b.finalizeEntry(c, sc.stream, row.EntryID, guard, t.token, ev, writes)
				writes = append(writes, b.touchWorker(c, worker, rec, now, keepCurrent, 0))
				return b.renew(c, writes), nil
			}
			state.ReclaimCount++
			hd.ReclaimCount = state.ReclaimCount
			ev, err := events.Reclaimed{
				Head: hd, PreviousWorkerID: prev, Stream: string(sc.stream), EntryID: row.EntryID, DeliveryCount: dc,
			}.Encode()
			if err != nil {
				return nil, err
			}
			if recErr != nil {
				return nil, recErr
			}
			out.Status = ReclaimTaken
			out.typeMissing = !f.hasType
			out.Reservation = Reservation{
				WorkerID: worker, Stream: sc.stream, EntryID: row.EntryID, UnitID: f.id, UnitType: f.typ,
				DeliveryCount: dc, RetryIndex: state.RetryIndex, ReclaimCount: state.ReclaimCount,
			}
			writes = append(writes,
				c.B().Hset().Key(k.UnitState).FieldValue().FieldValue(f.id, string(state.Encode())).Build(),
				b.appendEvent(c, ev),
				b.touchWorker(c, worker, rec, now, setCurrent(f.id), 0))
			return b.renew(c, writes), nil
		}
		return bare(writes) // nothing claimed: at most deleted entries dropped
	})
	if err != nil {
		return Reclaimed{}, err
	}
	b.consumers.created(worker, consumers)
	if corrupt != nil {
		return out, corrupt
	}
	return out, nil
}

// entryAt names one entry of one unit stream.
type entryAt struct {
	stream Stream
	id     string
}

// scanReplies is how many replies scanCmds' commands give.
const scanReplies = 6

// allWatched tells whether the guards of every entry in the scans' windows,
// and of their candidates, are among those watched: then no entry can
// leave a window, or stop being its stream's candidate by being settled,
// without aborting the commit.
func allWatched(scans []streamScan, watched map[entryAt]bool) bool {
	for _, sc := range scans {
		if sc.hasCnd && !watched[entryAt{sc.stream, sc.cand.EntryID}] {
			return false
		}
		for _, row := range sc.window {
			if !watched[entryAt{sc.stream, row.EntryID}] {
				return false
			}
		}
	}
	return true
}

// scanCmds reads what a reclaim decides on, per unit stream (priority
// first): the first entry idle for the timeout anywhere in the pending list
// (the reference checks its unit's state before moving anything), the first
// fence.ScanWindow pending entries (XAUTOCLAIM's reach), and the stream's
// info, whose max-deleted-entry-id tells which pending entries might have
// been deleted from the stream.
func (b *Build) scanCmds(c rueidis.DedicatedClient, timeoutMS int64) rueidis.Commands {
	k := b.keys
	cmds := make(rueidis.Commands, 0, scanReplies)
	for _, s := range []Stream{StreamPriority, StreamUnits} {
		cmds = append(cmds,
			c.B().Xpending().Key(k.stream(s)).Group(Group).Idle(timeoutMS).Start("-").End("+").Count(1).Build(),
			c.B().Xpending().Key(k.stream(s)).Group(Group).Start("-").End("+").Count(fence.ScanWindow).Build(),
			c.B().XinfoStream().Key(k.stream(s)).Build())
	}
	return cmds
}

// unitStates returns the unit_state of units (missing ones are left out).
// The states of the units in read were read already, as prefetched; the
// others cost a round trip.
func (b *Build) unitStates(ctx context.Context, c rueidis.DedicatedClient, units, read []string, prefetched map[string]string) (map[string]string, error) {
	var rest []string
	for _, u := range units {
		if !slices.Contains(read, u) && !slices.Contains(rest, u) {
			rest = append(rest, u)
		}
	}
	if len(rest) == 0 {
		return prefetched, nil
	}
	states, err := hmgetStates(rest, c.Do(ctx, c.B().Hmget().Key(b.keys.UnitState).Field(rest...).Build()))
	if err != nil {
		return nil, err
	}
	for u, s := range prefetched {
		states[u] = s
	}
	return states, nil
}

// hmgetStates reads HMGET unit_state's reply for units: a missing state is
// left out.
func hmgetStates(units []string, r rueidis.RedisResult) (map[string]string, error) {
	vals, err := fieldValues(r, len(units), "HMGET unit_state")
	if err != nil {
		return nil, err
	}
	states := make(map[string]string, len(units))
	for i, v := range vals {
		if s, err := v.ToString(); err == nil {
			states[units[i]] = s
		}
	}
	return states, nil
}

// mayClaim reports whether a reclaim's walk may stand on the unit state of
// the entry at, as the first look saw the pending lists: it is a stream's
// idle candidate, or idle in its window.
func mayClaim(scans []streamScan, at entryAt, timeoutMS int64) bool {
	for _, sc := range scans {
		if sc.stream != at.stream {
			continue
		}
		if sc.hasCnd && sc.cand.EntryID == at.id {
			return true
		}
		for _, row := range sc.window {
			if row.EntryID == at.id {
				return fence.Idle(row, timeoutMS)
			}
		}
	}
	return false
}

func parseScans(res []rueidis.RedisResult) ([]streamScan, error) {
	scans := make([]streamScan, 0, 2)
	for i, s := range []Stream{StreamPriority, StreamUnits} {
		cand, has, err := pendingRow(res[3*i])
		if err != nil {
			return nil, fmt.Errorf("queue: XPENDING %s: %w", s, err)
		}
		window, err := pendingRows(res[3*i+1])
		if err != nil {
			return nil, fmt.Errorf("queue: XPENDING %s: %w", s, err)
		}
		sc := streamScan{stream: s, cand: cand, hasCnd: has, window: window}
		if info, err := res[3*i+2].AsMap(); err == nil {
			if m, ok := info["max-deleted-entry-id"]; ok {
				if id, err := m.ToString(); err == nil {
					sc.maxDeletedMS, sc.maxDeletedSeq, sc.knowsDeleted = parseEntryID(id)
				}
			}
		}
		scans = append(scans, sc)
	}
	return scans, nil
}

// entryFields is a unit entry as XRANGE returns it.
type entryFields struct {
	exists, hasID, hasType bool
	id, typ                string
}

func parseEntry(r rueidis.RedisResult) entryFields {
	entries, err := r.AsXRange()
	if err != nil || len(entries) == 0 {
		return entryFields{}
	}
	f := entryFields{exists: true}
	f.id, f.hasID = entries[0].FieldValues["id"]
	f.typ, f.hasType = entries[0].FieldValues["type"]
	return f
}

func optionalStringOK(r rueidis.RedisResult) (string, bool) {
	s, ok, err := optionalString(r)
	return s, ok && err == nil
}
