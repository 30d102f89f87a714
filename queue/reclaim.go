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
}

// idleRows returns the window's entries idle for the timeout, in id order.
func (s streamScan) idleRows(timeoutMS int64) []fence.Row {
	var out []fence.Row
	for _, row := range s.window {
		if fence.Idle(row, timeoutMS) {
			out = append(out, row)
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
	wguard := b.keys.workerGuard(worker)
	err = b.commit(ctx, ModeReclaim, wguard, func(ctx context.Context, c rueidis.DedicatedClient, token string) (rueidis.Commands, error) {
		out, corrupt = Reclaimed{}, nil
		k := b.keys
		scanCmds := func() rueidis.Commands {
			var cmds rueidis.Commands
			for _, s := range []Stream{StreamPriority, StreamUnits} {
				cmds = append(cmds,
					c.B().Xpending().Key(k.stream(s)).Group(Group).Idle(timeoutMS).Start("-").End("+").Count(1).Build(),
					c.B().Xpending().Key(k.stream(s)).Group(Group).Start("-").End("+").Count(fence.ScanWindow).Build())
			}
			return cmds
		}
		// First look, unwatched: usually nothing is idle, and that costs one
		// round trip.
		first := c.DoMulti(ctx, append(rueidis.Commands{
			c.B().Exists().Key(k.Meta).Build(),
			c.B().Hget().Key(k.Meta).Field("max_reclaims").Build(),
		}, scanCmds()...)...)
		if n, err := first[0].AsInt64(); err != nil {
			return nil, errUnwatched{err}
		} else if n == 0 {
			return nil, errUnwatched{fmt.Errorf("%w: meta is missing (reclaim by %q)", ErrCorrupt, worker)}
		}
		scans, err := parseScans(first[2:])
		if err != nil {
			return nil, errUnwatched{err}
		}
		var idle []fence.Row
		var idleStreams []Stream
		anyCand := false
		for _, s := range scans {
			anyCand = anyCand || s.hasCnd
			for _, row := range s.idleRows(timeoutMS) {
				idle = append(idle, row)
				idleStreams = append(idleStreams, s.stream)
			}
		}
		if !anyCand {
			return nil, errUnwatched{nil}
		}
		maxRaw, maxOK := optionalStringOK(first[1])
		maxReclaims := budget.Frozen(maxRaw, maxOK, fallbackMax)

		// Second look, with the guards of every idle entry watched: this is
		// the read the decision stands on.
		watch := []string{wguard}
		for i, row := range idle {
			if entryGuards {
				watch = append(watch, k.entryGuard(idleStreams[i], row.EntryID))
			}
		}
		cmds := rueidis.Commands{c.B().Watch().Key(watch...).Build()}
		cmds = append(cmds, scanCmds()...)
		for _, s := range scans {
			if s.hasCnd {
				cmds = append(cmds, c.B().Xrange().Key(k.stream(s.stream)).Start(s.cand.EntryID).End(s.cand.EntryID).Build())
			}
		}
		for i, row := range idle {
			cmds = append(cmds, c.B().Xrange().Key(k.stream(idleStreams[i])).Start(row.EntryID).End(row.EntryID).Build())
		}
		cmds = append(cmds, c.B().Hget().Key(k.Workers).Field(worker).Build(), c.B().Time().Build())
		second := c.DoMulti(ctx, cmds...)
		if err := second[0].Error(); err != nil {
			return nil, err
		}
		again, err := parseScans(second[1:5])
		if err != nil {
			return nil, err
		}
		// What the first look ranged: candidates' and idle entries' fields.
		type at struct {
			s  Stream
			id string
		}
		fields := map[at]entryFields{}
		watched := map[at]bool{}
		pos := 5
		for _, sc := range scans {
			if sc.hasCnd {
				fields[at{sc.stream, sc.cand.EntryID}] = parseEntry(second[pos])
				pos++
			}
		}
		for i, row := range idle {
			fields[at{idleStreams[i], row.EntryID}] = parseEntry(second[pos])
			watched[at{idleStreams[i], row.EntryID}] = true
			pos++
		}
		// The decision stands on the second look. An entry it needs that the
		// first look did not range (or, if it may be claimed, did not watch)
		// means the lists moved in between: look again.
		scans = again
		candFields := map[Stream]entryFields{}
		idle, idleStreams = idle[:0], idleStreams[:0]
		var idleFields []entryFields
		for _, sc := range scans {
			if sc.hasCnd {
				f, ok := fields[at{sc.stream, sc.cand.EntryID}]
				if !ok {
					return nil, errRetry
				}
				candFields[sc.stream] = f
			}
			for _, row := range sc.idleRows(timeoutMS) {
				if !watched[at{sc.stream, row.EntryID}] {
					return nil, errRetry
				}
				f := fields[at{sc.stream, row.EntryID}]
				idle = append(idle, row)
				idleStreams = append(idleStreams, sc.stream)
				idleFields = append(idleFields, f)
				if f.exists {
					break // the one XAUTOCLAIM would take; later ones do not matter
				}
			}
		}
		raw, found, err := optionalString(second[pos])
		if err != nil {
			return nil, err
		}
		rec, err := parseWorkerRecord(raw, found)
		if err != nil {
			return nil, err
		}
		now, err := nowMS(second[pos+1])
		if err != nil {
			return nil, err
		}

		// The units whose state the decision needs: each candidate's (the
		// reference refuses to move ownership of a unit whose state is gone)
		// and each idle entry's.
		var units []string
		for _, f := range candFields {
			if f.exists && f.hasID {
				units = append(units, f.id)
			}
		}
		for _, f := range idleFields {
			if f.exists && f.hasID {
				units = append(units, f.id)
			}
		}
		slices.Sort(units)
		units = slices.Compact(units)
		states := map[string]string{}
		if len(units) > 0 {
			vals, err := c.Do(ctx, c.B().Hmget().Key(k.UnitState).Field(units...).Build()).ToArray()
			if err != nil {
				return nil, err
			}
			for i, v := range vals {
				if s, err := v.ToString(); err == nil {
					states[units[i]] = s
				}
			}
		}

		// Replay the reference's reclaim on what was read.
		var writes rueidis.Commands
		drop := func(s Stream, id string) {
			writes = append(writes, c.B().Xack().Key(k.stream(s)).Group(Group).Id(id).Build())
			writes = append(writes, b.dropGuard(c, k.entryGuard(s, id), token)...)
		}
		idx := 0
		for _, s := range scans {
			if s.hasCnd {
				if f := candFields[s.stream]; f.exists && f.hasID {
					if _, ok := states[f.id]; !ok {
						corrupt = fmt.Errorf("%w: unit_state of %q is missing (reclaim of %s %s)", ErrCorrupt, f.id, s.stream, s.cand.EntryID)
						return writes, nil // nil unless an earlier stream dropped deleted entries
					}
				}
			}
			claimed := -1
			for ; idx < len(idle) && idleStreams[idx] == s.stream; idx++ {
				if claimed >= 0 {
					continue
				}
				if !idleFields[idx].exists {
					drop(s.stream, idle[idx].EntryID) // XAUTOCLAIM drops entries deleted from the stream
					continue
				}
				claimed = idx
			}
			if claimed < 0 {
				continue
			}
			row, f := idle[claimed], idleFields[claimed]
			if !f.hasID {
				return nil, fmt.Errorf("queue: %s entry %s has no id field", s.stream, row.EntryID)
			}
			prev := ""
			if s.hasCnd && s.cand.EntryID == row.EntryID {
				prev = s.cand.Consumer
			}
			dc := row.DeliveryCount + 1
			guard := k.entryGuard(s.stream, row.EntryID)
			writes = append(writes,
				c.B().Xclaim().Key(k.stream(s.stream)).Group(Group).Consumer(worker).MinIdleTime("0").Id(row.EntryID).Build(),
				b.setGuard(c, guard, token))
			rawState, ok := states[f.id]
			if !ok {
				corrupt = fmt.Errorf("%w: unit_state of %q is missing (reclaimed %s %s)", ErrCorrupt, f.id, s.stream, row.EntryID)
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
					Head: hd, Stream: string(s.stream), EntryID: row.EntryID, PreviousWorkerID: prev, DeliveryCount: dc,
				}.Encode()
				if err != nil {
					return nil, err
				}
				out.Status = ReclaimFinalized
				writes = b.finalizeEntry(c, s.stream, row.EntryID, token, ev, writes)
				writes = append(writes, b.touchWorker(c, worker, rec, now, keepCurrent, 0))
				return b.renew(c, writes), nil
			}
			state.ReclaimCount++
			hd.ReclaimCount = state.ReclaimCount
			ev, err := events.Reclaimed{
				Head: hd, PreviousWorkerID: prev, Stream: string(s.stream), EntryID: row.EntryID, DeliveryCount: dc,
			}.Encode()
			if err != nil {
				return nil, err
			}
			out.Status = ReclaimTaken
			out.typeMissing = !f.hasType
			out.Reservation = Reservation{
				WorkerID: worker, Stream: s.stream, EntryID: row.EntryID, UnitID: f.id, UnitType: f.typ,
				DeliveryCount: dc, RetryIndex: state.RetryIndex, ReclaimCount: state.ReclaimCount,
			}
			writes = append(writes,
				c.B().Hset().Key(k.UnitState).FieldValue().FieldValue(f.id, string(state.Encode())).Build(),
				b.appendEvent(c, ev),
				b.touchWorker(c, worker, rec, now, setCurrent(f.id), 0))
			return b.renew(c, writes), nil
		}
		return writes, nil // nothing claimable: at most deleted entries dropped
	})
	if err != nil {
		return Reclaimed{}, err
	}
	if corrupt != nil {
		return out, corrupt
	}
	return out, nil
}

func parseScans(res []rueidis.RedisResult) ([]streamScan, error) {
	scans := make([]streamScan, 0, 2)
	for i, s := range []Stream{StreamPriority, StreamUnits} {
		cand, has, err := pendingRow(res[2*i])
		if err != nil {
			return nil, fmt.Errorf("queue: XPENDING %s: %w", s, err)
		}
		window, err := pendingRows(res[2*i+1])
		if err != nil {
			return nil, fmt.Errorf("queue: XPENDING %s: %w", s, err)
		}
		scans = append(scans, streamScan{stream: s, cand: cand, hasCnd: has, window: window})
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
