package queue

import (
	"slices"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// A worker's transitions on one reservation come in a known order:
// delivery accounting, then heartbeats, then a settlement. When a lone
// transition commits, its connection can carry behind the EXEC, in the
// same write, the first round trip of the transition its worker is likely
// to call next (the WATCH of its guards and its reads, as chaining does
// for a waiting batch, see chain.go), and the Build keeps that connection,
// still watching, for the worker. If the worker's next transition is that
// one and comes soon enough, it commits on the kept reads in one round
// trip.
//
// The reads were made after the WATCH, so the commit's EXEC aborts if any
// guard they stand on moved since: every ownership change writes the
// guards. An abort falls back to the two-round-trip path. A refusal
// (STALE, CORRUPT) is never decided on kept reads: reads made before the
// call may back a commit its EXEC checks, never a refusal, so a decision
// that refuses starts over with fresh reads. Meta's existence is read,
// not watched, in both paths; kept reads are used only while younger than
// machinery.KeptMaxAge (a second), so the build's loss is seen that much later at most.
//
// A kept connection that is not used in time is given back, disarmed, by
// a timer: its reads cost the server a round trip's work for nothing.
// Reads are kept for a worker only while its transitions come quickly
// enough to use them (machinery.KeptPace).

// keptReads holds, per worker, a connection watching that worker's likely
// next transition's guards, with the replies of its reads.
type keptReads struct {
	trips machinery.Slots[*keptTrip]
	mu    sync.Mutex // guards pace
	pace  machinery.KeptPace
}

// keptTrip is one worker's kept first round trip.
type keptTrip struct {
	p    *prefetch
	r    Reservation
	mode string // the transition it was read for
}

// nextMode is the transition a worker likely calls after mode on the same
// reservation; "" when none is worth reading for.
func nextMode(mode string) string {
	switch mode {
	case ModeDeliveryAccounting:
		return ModeHeartbeat
	case ModeHeartbeat:
		return ModeFinalize
	}
	return ""
}

// take removes and returns the reads kept for op's worker when they were
// read for op (its mode, its entry, its unit) and are fresh; stale or other
// reads are given back. nil: nothing to stand on.
func (k *keptReads) take(e *engine, op *fencedOp) *prefetch {
	k.mu.Lock()
	if k.pace.Limit == 0 {
		k.pace = machinery.KeptPace{Window: machinery.KeptMaxAge, Limit: machinery.MaxPacedWorkers, Next: nextMode, Settles: isSettlement}
	}
	k.pace.Called(op.r.WorkerID, op.mode, time.Now())
	k.mu.Unlock()
	kt, ok := k.trips.Take(op.r.WorkerID)
	if !ok {
		return nil
	}
	same := kt.mode == op.mode && kt.r.Stream == op.r.Stream && kt.r.EntryID == op.r.EntryID && kt.r.UnitID == op.r.UnitID
	if !same || op.tail || !sameTrip(kt.p.trip, e.planTrip([]*fencedOp{op})) {
		go kt.p.drop()
		return nil
	}
	kt.p.batch = []*fencedOp{op}
	return kt.p
}

// sameTrip tells whether a kept trip has the shape op's own would have,
// its TIME aside: the kept one's replies are read by its own shape.
func sameTrip(kept, own batchTrip) bool {
	kr, or := kept.reads, own.reads
	return kept.tail == own.tail && kr.units == or.units && kr.ranged == or.ranged && slices.Equal(kr.known, or.known) && slices.Equal(kept.gs, own.gs)
}

// arm returns what a batch's commit carries behind its EXEC: chain, the
// next batch; and for a lone transition whose worker's reads are kept,
// when chain carries nothing, the first round trip of the worker's likely
// next transition. keep, called once the commit is over, keeps that
// connection for the worker when the commit went through, or gives it back.
func (k *keptReads) arm(e *engine, batch []*fencedOp, chain *chained) ([]txn.Behind[rueidis.DedicatedClient], func()) {
	op := batch[0]
	k.mu.Lock()
	keeps := len(batch) == 1 && k.pace.Keeps(op.r.WorkerID, op.mode)
	k.mu.Unlock()
	if !keeps {
		return append(chain.room[:0], chain), func() {}
	}
	ahead := &keptAhead{e: e, r: op.r, mode: nextMode(op.mode), chain: chain}
	keep := func() {
		mine := ahead.mine
		if mine == nil || mine.on.Replies == nil {
			return
		}
		if op.err != nil {
			go mine.drop()
			return
		}
		k.put(op.r, ahead.mode, mine)
	}
	return append(chain.room[:0], chain, ahead), keep
}

// keptAhead carries the first round trip of the transition r's worker
// likely calls next (mode), when chain carries nothing.
type keptAhead struct {
	e     *engine
	r     Reservation
	mode  string
	chain *chained
	mine  *prefetch // the last one carried
}

func (a *keptAhead) Carry(c rueidis.DedicatedClient) rueidis.Commands {
	if a.chain.p != nil {
		return nil
	}
	if a.mine != nil {
		a.mine.drop() // an earlier attempt's, behind an EXEC that aborted
	}
	ghost := []*fencedOp{{mode: a.mode, r: a.r}}
	a.mine = &prefetch{batch: ghost, trip: a.e.planTrip(ghost), kept: true}
	return a.e.appendTripCommands(nil, c, ghost, a.mine.trip)
}

func (a *keptAhead) Arrived(c rueidis.DedicatedClient, release func(), res []rueidis.RedisResult, _ error) bool {
	a.mine.arrived = a.e.clock.Mono()
	return a.mine.on.Arrived(c, release, res)
}

// put keeps p for r's worker, giving back what it held before.
func (k *keptReads) put(r Reservation, mode string, p *prefetch) {
	k.trips.Put(r.WorkerID, &keptTrip{p: p, r: r, mode: mode})
}

func (kt *keptTrip) Drop() { kt.p.drop() }

// firstRefusal is the refusal of the first op of a batch that got one;
// nil: none did.
func firstRefusal(ops []*fencedOp) error {
	for _, op := range ops {
		if op.err != nil {
			return op.err
		}
	}
	return nil
}
