package queue

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue/internal/sched"
	"github.com/redis/rueidis"
)

// The fenced transitions of one reservation (delivery accounting,
// heartbeat, finalize, requeue, abandoned) each cost two round trips and a
// transaction of their own. Those of one Build that arrive while another is
// committing wait, and then commit together, in one transaction, in the
// order they arrived: the guards of all of them watched, all their reads in
// one round trip, every decision taken on those reads as if each transition
// ran alone in turn, and all their writes in one MULTI ... EXEC, with the
// build's TTLs renewed once. Each transition keeps its own outcome. The more
// workers of one process transact at once, the fewer round trips and
// commands each costs; and a Build never races itself, on the priority
// tail or anywhere else. Transitions of other processes race through the
// guards as before, which alone keep every one of them correct. Which
// transitions share a batch, and which wait, is package sched's.

// maxBatch bounds the transitions of one transaction: its reads and writes
// grow with each, and so does the cost of an abort.
const maxBatch = 32

// maxLanes is how many batches of one Build may be in flight at once. One
// alone would make every transition wait for the batch ahead of it, two
// round trips, even when Redis and the network have room for more; with a
// few, transitions run alone, as they would unbatched, until more arrive at
// once than there are lanes, and only then share transactions.
const maxLanes = 4

// fencedOp is one fenced transition waiting for, or taken into, a batch.
type fencedOp struct {
	mode string
	r    Reservation
	// tail: the op may put its unit back on the priority stream, so the
	// batch watches the tail guard and reads the budgets (see requeue.go).
	// Only one batch in flight holds such ops, so that a Build's requeues
	// never race each other on the tail.
	tail bool
	// plan checks what was read for r and appends r's writes (the TTL
	// renewal left out), or gives the refusal that is r's outcome. It
	// decides once per attempt of the batch, and sets the caller's outputs.
	plan fencedPlan

	ctx  context.Context
	err  error
	wake chan wakeup
	// chain is how the batch this op leads carries the next one (see
	// chain.go), kept here so that it costs no allocation of its own.
	chain chained
}

// fencedPlan is a fenced transition: what it was called with, its
// outputs, and its decision. The decision, on what was read for its
// reservation (h), its guards g, the batch's tail state t (requeues) and
// the attempt's token, is writes with its own appended, or its refusal.
// Appending to the batch's writes spares every transition a slice of its
// own; a plan that embeds its fencedOp is one allocation.
type fencedPlan interface {
	decide(c rueidis.DedicatedClient, h held, g guards, t *tailState, token string, writes rueidis.Commands) (rueidis.Commands, error)
}

// Claims names what op decides on and writes, for the scheduler's rules.
func (o *fencedOp) Claims() sched.Claims {
	return sched.Claims{Worker: o.r.WorkerID, Unit: o.r.UnitID, Stream: string(o.r.Stream), Entry: o.r.EntryID, Tail: o.tail}
}

// readsState tells whether op decides on its unit's state: every fenced
// transition but the heartbeat.
func (o *fencedOp) readsState() bool { return o.mode != ModeHeartbeat }

// wakeup tells a waiting op what became of it: it leads batch, whose first
// round trip from may already have made (see chain.go); or, batch nil, its
// batch committed and err is set.
type wakeup struct {
	batch []*fencedOp
	from  *prefetch
}

// batcher queues a Build's fenced transitions behind its batches in flight.
type batcher struct{ s *sched.Scheduler[*fencedOp] }

func newBatcher() batcher {
	return batcher{s: sched.New[*fencedOp](sched.Limits{MaxBatch: maxBatch, MaxLanes: maxLanes})}
}

// do runs op: at once when a lane is free, else in a later batch. A caller
// whose ctx ends while it waits leaves the queue with ctx's error; once
// taken into a batch, its transition runs with the batch, which stops
// retrying only when every caller in it has given up (see batchContext).
func (q *batcher) do(ctx context.Context, e *engine, op *fencedOp) error {
	op.ctx = ctx
	if e.inline {
		e.commitBatch(ctx, []*fencedOp{op}, nil, nil) // alone, nothing carried (engine.go)
		return op.err
	}
	if kept := e.kept.take(e, op); kept != nil {
		if batch := q.s.StartAlone(op); batch != nil {
			q.run(e, batch, kept) // read for op alone: no lane to wait for
			return op.err
		}
		go kept.drop()
	}
	if batch := q.s.Start(op, awaitWakeup); batch != nil {
		q.run(e, batch, nil)
		return op.err
	}
	var w wakeup
	select {
	case w = <-op.wake:
	case <-ctx.Done():
		if q.s.Withdraw(op) {
			return ctx.Err()
		}
		w = <-op.wake // already taken
	}
	if w.batch != nil {
		q.run(e, w.batch, w.from)
	}
	return op.err
}

// awaitWakeup readies op to wait: whoever opens its batch wakes it.
func awaitWakeup(op *fencedOp) { op.wake = make(chan wakeup, 1) }

// run commits batch, which holds a lane, tells its members their outcomes,
// gives the lane back, and wakes the leader of each batch there is now room
// for. from is the batch's first round trip when the commit before it
// carried it (see chain.go).
func (q *batcher) run(e *engine, batch []*fencedOp, from *prefetch) {
	ctx, cancel := batchContext(batch)
	chain := &batch[0].chain
	*chain = chained{e: e, q: q}
	behind, keep := e.kept.arm(e, batch, chain)
	behind = e.ahead.before(e, batch, behind) // see read_ahead.go
	e.commitBatch(ctx, batch, from, behind)
	keep()
	cancel()
	for _, o := range batch[1:] {
		o.wake <- wakeup{}
	}
	for _, next := range q.s.Finish(batch) {
		next[0].wake <- wakeup{batch: next}
	}
}

// fenced runs one fenced transition of r: alone on the inline engine,
// through the batches on the default one.
func (e *engine) fenced(ctx context.Context, op *fencedOp, plan fencedPlan) error {
	op.plan = plan
	return e.batches.do(ctx, e, op)
}

// holding is the check of every fenced transition but the heartbeat's: meta
// present, r still held, the unit's state present (see held.settled).
func holding(r Reservation, h held) error {
	return h.settled(r, fence.Expect{EntryID: r.EntryID, Owner: r.WorkerID, DeliveryCount: r.DeliveryCount})
}

// batchContext is the context a batch commits under. A lone transition's is
// its caller's. A batch carries the values of its first op's context and
// ends only when every caller's has (its cancellation then takes effect
// between attempts, as for any transition), with the latest of their
// deadlines when each has one, for the connection's timeouts.
func batchContext(batch []*fencedOp) (context.Context, context.CancelFunc) {
	if len(batch) == 1 {
		return batch[0].ctx, func() {}
	}
	base := context.WithoutCancel(batch[0].ctx)
	var latest time.Time
	for _, o := range batch {
		d, ok := o.ctx.Deadline()
		if !ok {
			latest = time.Time{}
			break
		}
		if d.After(latest) {
			latest = d
		}
	}
	cancelDeadline := context.CancelFunc(func() {})
	if !latest.IsZero() {
		base, cancelDeadline = context.WithDeadline(base, latest)
	}
	ctx, cancel := context.WithCancelCause(base)
	var left atomic.Int32
	left.Store(int32(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, o := range batch {
		stops[i] = context.AfterFunc(o.ctx, func() {
			if left.Add(-1) == 0 {
				cancel(o.ctx.Err())
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
		cancelDeadline()
	}
}
