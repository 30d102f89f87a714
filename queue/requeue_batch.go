package queue

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Every requeue WATCHes the build's tail guard, and every requeue that puts
// its unit back writes it: two requeues in flight at once abort one of them
// in Redis, which backs off and reads again, and when many workers requeue
// at once most of their round trips go to waste that way. The requeues of
// one Build therefore take turns, and those that arrive while one is
// committing wait and then commit together, in one transaction of their own
// (Build.requeueBatch), in the order they arrived: a Build never races
// itself on the tail, and the more requeues arrive at once, the fewer
// transactions carry them. Requeues of other processes still race through
// the guard, which alone keeps every requeue correct.

// maxRequeueBatch bounds the requeues of one transaction: its reads and
// writes grow with each, and so does the cost of an abort.
const maxRequeueBatch = 32

// requeueCall is one Requeue waiting for, or taken into, a batch.
type requeueCall struct {
	r    Reservation
	res  Result
	caps Budgets
	ctx  context.Context

	out  Requeued
	err  error
	wake chan bool // true: lead the next batch; false: out and err are set
}

// requeuer queues a Build's requeues behind the one batch in flight.
type requeuer struct {
	mu      sync.Mutex
	pending []*requeueCall
	leading bool // a batch is in flight, or about to be
}

// do runs call: at once when no batch is in flight, else in a later batch.
// A caller whose ctx ends while it waits leaves the queue with ctx's error;
// once taken into a batch, its requeue runs with the batch, which stops
// retrying only when every caller in it has given up (see batchContext).
func (q *requeuer) do(ctx context.Context, b *Build, call *requeueCall) (Requeued, error) {
	call.ctx, call.wake = ctx, make(chan bool, 1)
	q.mu.Lock()
	if !q.leading {
		q.leading = true
		q.mu.Unlock()
		return q.lead(b, call)
	}
	q.pending = append(q.pending, call)
	q.mu.Unlock()
	var lead bool
	select {
	case lead = <-call.wake:
	case <-ctx.Done():
		q.mu.Lock()
		if i := slices.Index(q.pending, call); i >= 0 {
			q.pending = slices.Delete(q.pending, i, i+1)
			q.mu.Unlock()
			return Requeued{}, ctx.Err()
		}
		q.mu.Unlock()
		lead = <-call.wake // already taken
	}
	if lead {
		return q.lead(b, call)
	}
	return call.out, call.err
}

// lead commits a batch of call and the requeues waiting that fit with it,
// hands the turn to the first one left waiting, and returns call's outcome.
func (q *requeuer) lead(b *Build, call *requeueCall) (Requeued, error) {
	q.mu.Lock()
	batch := q.take(call)
	q.mu.Unlock()

	ctx, cancel := batchContext(batch)
	b.requeueBatch(ctx, batch)
	cancel()
	for _, c := range batch[1:] {
		c.wake <- false
	}

	q.mu.Lock()
	if len(q.pending) == 0 {
		q.leading = false
		q.mu.Unlock()
	} else {
		next := q.pending[0]
		q.pending = q.pending[1:]
		q.mu.Unlock()
		next.wake <- true
	}
	return call.out, call.err
}

// take removes from the queue, in order, the waiting requeues that can share
// first's transaction: up to maxRequeueBatch, no two of the same worker,
// entry or unit, since each is decided on what was read before any of them
// wrote. The rest keep their place. q.mu is held.
func (q *requeuer) take(first *requeueCall) []*requeueCall {
	batch := []*requeueCall{first}
	overlaps := func(c *requeueCall) bool {
		for _, in := range batch {
			if in.r.WorkerID == c.r.WorkerID || in.r.UnitID == c.r.UnitID ||
				in.r.Stream == c.r.Stream && in.r.EntryID == c.r.EntryID {
				return true
			}
		}
		return false
	}
	left := q.pending[:0]
	for _, c := range q.pending {
		if len(batch) < maxRequeueBatch && !overlaps(c) {
			batch = append(batch, c)
		} else {
			left = append(left, c)
		}
	}
	clear(q.pending[len(left):])
	q.pending = left
	return batch
}

// batchContext is the context a batch commits under. A lone requeue's is
// its caller's. A batch carries the values of its first call's context and
// ends only when every caller's has (its cancellation then takes effect
// between attempts, as for any transition), with the latest of their
// deadlines when each has one, for the connection's timeouts.
func batchContext(batch []*requeueCall) (context.Context, context.CancelFunc) {
	if len(batch) == 1 {
		return batch[0].ctx, func() {}
	}
	base := context.WithoutCancel(batch[0].ctx)
	var latest time.Time
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
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
	for i, c := range batch {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if left.Add(-1) == 0 {
				cancel(c.ctx.Err())
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
