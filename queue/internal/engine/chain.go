package engine

import (
	"time"

	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// A batch's first round trip (WATCH, then its reads) needs nothing from the
// batch before it, only a connection with no WATCH armed, and a connection
// has none once its EXEC has run. So when a batch commits while others wait
// for a lane, it sends the first round trip of the next one behind its own
// EXEC, in the same write, and hands that connection, now watching the next
// batch's guards, to the next batch's leader, with the replies of its reads.
// That batch then needs one round trip of its own, its commit, and may in
// turn carry the one after it. Under load, when every lane is busy and
// transitions queue, a batch costs one round trip instead of two.
//
// Nothing about correctness changes: the next batch's WATCH and reads run
// after the EXEC before them, on the connection they would otherwise have
// had alone, and everything it decides is still checked by its EXEC
// against its own guards. The two batches never share a worker, a unit or
// an entry (the waiting batch is chosen as any other would be, among the
// transitions with nothing in flight), so their order does not matter.
// When the commit before it aborts, the next batch keeps its reads and
// commits on its own, and the aborted one tries again on another
// connection. When the connection fails on the way, the next batch has
// lost nothing but its reads, and starts over.

// prefetch is a batch's first round trip, made before its commit: behind
// another batch's EXEC, or kept for its worker.
type prefetch[S, T any] struct {
	batch []*Op[S, T]
	trip  T
	// the connection it went on, handed over with the replies when they
	// all arrived; its replies nil: lost, start over.
	on txn.Held[Conn]
	// kept: read before its transition was called (see kept_reads.go), so
	// it may back a commit but never a refusal (onKept).
	kept bool
	// arrived: the clock's mono time when its replies arrived. A TIME
	// among them is as old as that, however long it waits to be used
	// (machinery.Clock).
	arrived time.Duration
}

// arrivedAt is when p's replies arrived; zero when p is nil.
func (p *prefetch[S, T]) arrivedAt() time.Duration {
	if p == nil {
		return 0
	}
	return p.arrived
}

// held is the connection p holds, for the runner; nil when p is.
func (p *prefetch[S, T]) held() *txn.Held[Conn] {
	if p == nil {
		return nil
	}
	return &p.on
}

// drop gives back, disarmed, a connection p holds that will not be used.
func (p *prefetch[S, T]) drop() { p.held().Drop() }

// tripOr is the shape of the first round trip p made for ops, or, p nil,
// of the one they are to make.
func (p *prefetch[S, T]) tripOr(e *Engine[S, T], ops []*Op[S, T]) T {
	if p != nil {
		return p.trip
	}
	return e.domain.Trip(ops)
}

// chained carries, behind a commit's EXEC, the first round trip of the
// next batch the scheduler opens for it (sched.Scheduler.Follow), and
// hands that batch's leader the connection with the replies.
type chained[S, T any] struct {
	e *Engine[S, T]
	p *prefetch[S, T] // carried behind the commit being sent; nil: none
	// room for the list of what the commit carries (see keptReads.arm),
	// so that it costs no allocation of its own.
	room [2]Behind
}

func (k *chained[S, T]) Carry(c Conn) rueidis.Commands {
	k.p = nil
	batch := k.e.batches.Follow()
	if batch == nil {
		return nil
	}
	k.p = &prefetch[S, T]{batch: batch, trip: k.e.domain.Trip(batch)}
	return k.e.domain.AppendTrip(nil, c, batch, k.p.trip)
}

func (k *chained[S, T]) Arrived(c Conn, release func(), res []rueidis.RedisResult, _ error) bool {
	p := k.p
	k.p = nil
	p.arrived = k.e.Clock.Mono()
	holds := p.on.Arrived(c, release, res)
	p.batch[0].wake <- wakeup[S, T]{batch: p.batch, from: p}
	return holds
}
