package queue

import (
	"fmt"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// streamWalk is where the walk of one stream ended (see fence.Walk), with
// the entries the reclaim's writes stand on.
type streamWalk struct {
	cand    entryFields // the entry of the stream's idle candidate
	drop    string      // entry id dropped from the pending list
	claim   int         // index in the window of the entry claimed, or -1
	claimed entryFields
}

// walk walks each stream of s as XAUTOCLAIM ... COUNT 1 does, and returns
// the units whose states the writes decide on. What the walk needs must
// have been ranged, on what the first look saw (looked; the candidates):
// otherwise the pending lists moved in between, and it is errRetry.
func (s secondLook) walk(looked map[entryAt]bool, timeoutMS int64) ([]streamWalk, []string, error) {
	walks := make([]streamWalk, len(s.scans))
	var units []string
	for i, sc := range s.scans {
		w := streamWalk{claim: -1}
		if sc.hasCnd {
			f, ok := s.fields[entryAt{sc.stream, sc.cand.EntryID}]
			if !ok {
				return nil, nil, errRetry
			}
			w.cand = f
			if f.exists && f.hasID {
				units = append(units, f.id)
			}
		}
		end, ok := fence.Walk(sc.pending(looked, s.fields), timeoutMS)
		switch {
		case !ok:
			return nil, nil, errRetry
		case end.At >= 0 && end.Drop:
			w.drop = sc.window[end.At].EntryID
		case end.At >= 0:
			w.claim, w.claimed = end.At, s.fields[entryAt{sc.stream, sc.window[end.At].EntryID}]
			if w.claimed.hasID {
				units = append(units, w.claimed.id)
			}
		}
		walks[i] = w
	}
	return walks, units, nil
}

// writes decides the reclaim on what the second look read
// (docs/design.md#reclaim), stream by stream, priority first: an idle
// candidate whose unit's state is missing is refused before ownership
// moves, a deleted entry is dropped, the entry claimed ends it (see
// claim). states are the units' states, missing ones left out.
func (r *reclaimer) writes(s secondLook, walks []streamWalk, states map[string]string, maxReclaims float64) (rueidis.Commands, error) {
	k, c := r.e.schema.keys, r.c
	var writes rueidis.Commands
	for i, sc := range s.scans {
		w := walks[i]
		if sc.hasCnd && w.cand.exists && w.cand.hasID {
			if _, ok := states[w.cand.id]; !ok {
				// Refused before ownership moves; earlier streams' drops stand.
				r.corrupt = fmt.Errorf("%w: unit_state of %q is missing (reclaim of %s %s)", ErrCorrupt, w.cand.id, sc.stream, sc.cand.EntryID)
				return r.bare(writes)
			}
		}
		writes = r.createConsumer(writes, sc.stream) // as an XAUTOCLAIM of this stream would
		if w.drop != "" {
			// XAUTOCLAIM drops an entry deleted from the stream from the
			// pending list, and that ends its walk of this stream.
			writes = append(writes, c.B().Xack().Key(k.stream(sc.stream)).Group(Group).Id(w.drop).Build())
			writes = r.e.schema.dropGuard(c, writes, k.entryGuard(sc.stream, w.drop), r.t.Token)
			continue
		}
		if w.claim >= 0 {
			return r.claim(writes, s, sc, w, states, maxReclaims)
		}
	}
	return r.bare(writes) // nothing claimed: at most deleted entries dropped
}

// claimedEntry is the entry a reclaim claims, and its unit's state.
type claimedEntry struct {
	stream Stream
	row    fence.Row
	f      entryFields
	prev   string // the owner it is taken from, when known
	guard  string
	state  budget.State
}

// claim claims w's entry of sc: XCLAIM, then either the unit is finalized,
// its reclaim budget used up, or the worker takes it.
func (r *reclaimer) claim(writes rueidis.Commands, s secondLook, sc streamScan, w streamWalk, states map[string]string, maxReclaims float64) (rueidis.Commands, error) {
	lay, c := r.e.schema, r.c
	e := claimedEntry{stream: sc.stream, row: sc.window[w.claim], f: w.claimed}
	if !e.f.hasID {
		return nil, fmt.Errorf("queue: %s entry %s has no id field", sc.stream, e.row.EntryID)
	}
	if sc.hasCnd && sc.cand.EntryID == e.row.EntryID {
		e.prev = sc.cand.Consumer
	}
	e.guard = lay.keys.entryGuard(sc.stream, e.row.EntryID)
	writes = append(writes,
		c.B().Xclaim().Key(lay.keys.stream(sc.stream)).Group(Group).Consumer(r.worker).MinIdleTime("0").Id(e.row.EntryID).Build(),
		lay.setGuard(c, e.guard, r.t.Token))
	rawState, ok := states[e.f.id]
	if !ok {
		r.corrupt = fmt.Errorf("%w: unit_state of %q is missing (reclaimed %s %s)", ErrCorrupt, e.f.id, sc.stream, e.row.EntryID)
		return writes, nil
	}
	var err error
	if e.state, err = budget.DecodeState(rawState); err != nil {
		return nil, err
	}
	r.out.UnitID, r.out.PreviousWorkerID = e.f.id, e.prev
	if budget.ReclaimExhausted(e.state, maxReclaims) {
		return r.finalizeExhausted(writes, s, e)
	}
	return r.take(writes, s, e)
}

// finalizeExhausted finalizes e's unit as failed, its reclaim budget used up.
func (r *reclaimer) finalizeExhausted(writes rueidis.Commands, s secondLook, e claimedEntry) (rueidis.Commands, error) {
	lay, c := r.e.schema, r.c
	ev, err := events.ReclaimBudgetExhausted{
		Head: r.head(s, e), Stream: string(e.stream), EntryID: e.row.EntryID, PreviousWorkerID: e.prev, DeliveryCount: e.row.DeliveryCount + 1,
	}.Encode()
	if err != nil {
		return nil, err
	}
	r.out.Status = ReclaimFinalized
	if s.recErr != nil {
		return nil, s.recErr
	}
	writes = lay.finalizeEntry(c, e.stream, e.row.EntryID, e.guard, r.t.Token, ev, writes)
	writes = append(writes, lay.touchWorker(c, r.worker, s.rec, s.now, keepCurrent, 0))
	return lay.renew(c, writes), nil
}

// take gives e to the worker, one more reclaim counted.
func (r *reclaimer) take(writes rueidis.Commands, s secondLook, e claimedEntry) (rueidis.Commands, error) {
	lay, c := r.e.schema, r.c
	state, dc := e.state, e.row.DeliveryCount+1
	state.ReclaimCount++
	e.state = state
	ev, err := events.Reclaimed{
		Head: r.head(s, e), PreviousWorkerID: e.prev, Stream: string(e.stream), EntryID: e.row.EntryID, DeliveryCount: dc,
	}.Encode()
	if err != nil {
		return nil, err
	}
	if s.recErr != nil {
		return nil, s.recErr
	}
	r.out.Status = ReclaimTaken
	r.out.typeMissing = !e.f.hasType
	r.out.Reservation = Reservation{
		WorkerID: r.worker, Stream: e.stream, EntryID: e.row.EntryID, UnitID: e.f.id, UnitType: e.f.typ,
		DeliveryCount: dc, RetryIndex: state.RetryIndex, ReclaimCount: state.ReclaimCount,
	}
	writes = append(writes,
		c.B().Hset().Key(lay.keys.UnitState).FieldValue().FieldValue(e.f.id, string(state.Encode())).Build(),
		lay.appendEvent(c, ev),
		lay.touchWorker(c, r.worker, s.rec, s.now, setCurrent(e.f.id), 0))
	return lay.renew(c, writes), nil
}

// head is the head of the event of e's reclaim.
func (r *reclaimer) head(s secondLook, e claimedEntry) events.Head {
	return events.Head{UnitID: e.f.id, WorkerID: r.worker, RetryIndex: e.state.RetryIndex, ReclaimCount: e.state.ReclaimCount, AtMS: s.now}
}

// createConsumer leaves the consumer group holding what an XAUTOCLAIM of
// stream s would have left (see machinery.ConsumerPolicy).
func (r *reclaimer) createConsumer(writes rueidis.Commands, s Stream) rueidis.Commands {
	if cmd, ok := r.e.eng.Consumers.Create(r.c, r.e.schema.keys.stream(s), Group, r.worker); ok {
		r.consumers = append(r.consumers, r.e.schema.keys.stream(s))
		return append(writes, cmd)
	}
	return writes
}

// bare sends consumer creations that are all a reclaim writes without a
// commit: they are idempotent, so they need no guard and no commit token,
// and the worker's guard is left as it was.
func (r *reclaimer) bare(writes rueidis.Commands) (rueidis.Commands, error) {
	if len(writes) == 0 || len(writes) != len(r.consumers) {
		return writes, nil
	}
	for _, res := range r.c.DoMulti(r.ctx, writes...) {
		if err := res.Error(); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
