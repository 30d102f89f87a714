package engine

import (
	"sync"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/sched"
	"github.com/redis/rueidis"
)

// A worker's transitions on one reservation come in a known order
// (Domain.NextMode): delivery accounting, then heartbeats, then a
// settlement. When a lone transition commits, its connection can carry
// behind the EXEC, in the same write, the first round trip of the
// transition its worker is likely to call next (the WATCH of its guards
// and its reads, as chaining does for a waiting batch, see chain.go), and
// the engine keeps that connection, still watching, for the worker. If
// the worker's next transition is that one and comes soon enough, it
// commits on the kept reads in one round trip.
//
// The reads were made after the WATCH, so the commit's EXEC aborts if any
// guard they stand on moved since: every ownership change writes the
// guards. An abort falls back to the two-round-trip path. A refusal is
// never decided on kept reads (onKept). Kept reads are used only while
// younger than machinery.KeptMaxAge (a second). A kept connection that is
// not used in time is given back, disarmed, by a timer: its reads cost the
// server a round trip's work for nothing. Reads are kept for a worker only
// while its transitions come quickly enough to use them
// (machinery.KeptPace).

// keptReads holds, per worker, a connection watching that worker's likely
// next transition's guards, with the replies of its reads.
type keptReads[S, T any] struct {
	trips machinery.Slots[*keptTrip[S, T]]
	mu    sync.Mutex // guards pace
	pace  machinery.KeptPace
}

// keptTrip is one worker's kept first round trip, read for the
// transition mode on what claim names.
type keptTrip[S, T any] struct {
	p     *prefetch[S, T]
	claim sched.Claims
	mode  string
}

func (kt *keptTrip[S, T]) Drop() { kt.p.drop() }

// take removes and returns the reads kept for op's worker when they were
// read for op (its mode, its entry, its unit) and are fresh; stale or other
// reads are given back. nil: nothing to stand on.
func (k *keptReads[S, T]) take(e *Engine[S, T], op *Op[S, T]) *prefetch[S, T] {
	k.mu.Lock()
	if k.pace.Limit == 0 {
		k.pace = machinery.KeptPace{Window: machinery.KeptMaxAge, Limit: machinery.MaxPacedWorkers, Next: e.domain.NextMode, Settles: e.domain.Settles}
	}
	k.pace.Called(op.Claim.Worker, op.Mode, time.Now())
	k.mu.Unlock()
	kt, ok := k.trips.Take(op.Claim.Worker)
	if !ok {
		return nil
	}
	ops := []*Op[S, T]{op}
	if kt.mode != op.Mode || kt.claim != op.Claim || !e.domain.SameTrip(kt.p.trip, e.domain.Trip(ops)) {
		go kt.p.drop()
		return nil
	}
	kt.p.batch = ops
	return kt.p
}

// arm returns what a batch's commit carries behind its EXEC: chain, the
// next batch; and for a lone transition whose worker's reads are kept,
// when chain carries nothing, the first round trip of the worker's likely
// next transition. keep, called once the commit is over, keeps that
// connection for the worker when the commit went through, or gives it back.
func (k *keptReads[S, T]) arm(e *Engine[S, T], batch []*Op[S, T], chain *chained[S, T]) ([]Behind, func()) {
	op := batch[0]
	k.mu.Lock()
	keeps := len(batch) == 1 && !op.Claim.Tail && k.pace.Keeps(op.Claim.Worker, op.Mode)
	k.mu.Unlock()
	if !keeps {
		return append(chain.room[:0], chain), nothing
	}
	ahead := &keptAhead[S, T]{e: e, subject: op.Subject, claim: op.Claim, mode: e.domain.NextMode(op.Mode), chain: chain}
	keep := func() {
		mine := ahead.mine
		if mine == nil || mine.on.Replies == nil {
			return
		}
		if op.Err != nil {
			go mine.drop()
			return
		}
		k.trips.Put(op.Claim.Worker, &keptTrip[S, T]{p: mine, claim: op.Claim, mode: ahead.mode})
	}
	return append(chain.room[:0], chain, ahead), keep
}

// keptAhead carries the first round trip of the transition a worker
// likely calls next (mode) on subject, when chain carries nothing.
type keptAhead[S, T any] struct {
	e       *Engine[S, T]
	subject S
	claim   sched.Claims
	mode    string
	chain   *chained[S, T]
	mine    *prefetch[S, T] // the last one carried
}

func (a *keptAhead[S, T]) Carry(c Conn) rueidis.Commands {
	if a.chain.p != nil {
		return nil
	}
	if a.mine != nil {
		a.mine.drop() // an earlier attempt's, behind an EXEC that aborted
	}
	ghost := []*Op[S, T]{{Mode: a.mode, Subject: a.subject, Claim: a.claim}}
	a.mine = &prefetch[S, T]{batch: ghost, trip: a.e.domain.Trip(ghost), kept: true}
	return a.e.domain.AppendTrip(nil, c, ghost, a.mine.trip)
}

func (a *keptAhead[S, T]) Arrived(c Conn, release func(), res []rueidis.RedisResult, _ error) bool {
	a.mine.arrived = a.e.Clock.Mono()
	return a.mine.on.Arrived(c, release, res)
}
