package engine

import (
	"context"
	"sync/atomic"
	"time"
)

// The fenced transitions of one reservation each cost two round trips and
// a transaction of their own. Those of one Build that arrive while another
// is committing wait, and then commit together, in one transaction, in the
// order they arrived: the guards of all of them watched, all their reads
// in one round trip, every decision taken on those reads as if each
// transition ran alone in turn, and all their writes in one MULTI ... EXEC,
// with the build's TTLs renewed once. Each transition keeps its own
// outcome. The more workers of one process transact at once, the fewer
// round trips and commands each costs; and a Build never races itself.
// Transitions of other processes race through the guards as before, which
// alone keep every one of them correct. Which transitions share a batch,
// and which wait, is package sched's.

// wakeup tells a waiting op what became of it: it leads batch, whose first
// round trip from may already have made (see chain.go); or, batch nil, its
// batch committed and its Err is set.
type wakeup[S, T any] struct {
	batch []*Op[S, T]
	from  *prefetch[S, T]
}

// Do runs op, a fenced transition whose Plan the Domain decides: alone on
// the inline engine; else at once when a lane is free, or in a later
// batch. A caller whose ctx ends while it waits leaves the queue with
// ctx's error; once taken into a batch, its transition runs with the
// batch, which stops retrying only when every caller in it has given up
// (see batchContext). It returns op.Err.
func (e *Engine[S, T]) Do(ctx context.Context, op *Op[S, T]) error {
	op.ctx = ctx
	if e.inline {
		e.commitBatch(ctx, []*Op[S, T]{op}, nil, nil) // alone, nothing carried
		return op.Err
	}
	if kept := e.kept.take(e, op); kept != nil {
		if batch := e.batches.StartAlone(op); batch != nil {
			e.run(batch, kept) // read for op alone: no lane to wait for
			return op.Err
		}
		go kept.drop()
	}
	if batch := e.batches.Start(op, awaitWakeup[S, T]); batch != nil {
		e.run(batch, nil)
		return op.Err
	}
	var w wakeup[S, T]
	select {
	case w = <-op.wake:
	case <-ctx.Done():
		if e.batches.Withdraw(op) {
			return ctx.Err()
		}
		w = <-op.wake // already taken
	}
	if w.batch != nil {
		e.run(w.batch, w.from)
	}
	return op.Err
}

// awaitWakeup readies op to wait: whoever opens its batch wakes it.
func awaitWakeup[S, T any](op *Op[S, T]) { op.wake = make(chan wakeup[S, T], 1) }

// run commits batch, which holds a lane, tells its members their outcomes,
// gives the lane back, and wakes the leader of each batch there is now room
// for. from is the batch's first round trip when the commit before it
// carried it (see chain.go).
func (e *Engine[S, T]) run(batch []*Op[S, T], from *prefetch[S, T]) {
	ctx, cancel := batchContext(batch)
	chain := &batch[0].chain
	*chain = chained[S, T]{e: e}
	behind, keep := e.kept.arm(e, batch, chain)
	if carried := e.domain.Carried(batch); carried != nil {
		behind = append([]Behind{carried}, behind...) // before any WATCH the others carry
	}
	e.commitBatch(ctx, batch, from, behind)
	keep()
	cancel()
	for _, o := range batch[1:] {
		o.wake <- wakeup[S, T]{}
	}
	for _, next := range e.batches.Finish(batch) {
		next[0].wake <- wakeup[S, T]{batch: next}
	}
}

// batchContext is the context a batch commits under. A lone transition's is
// its caller's. A batch carries the values of its first op's context and
// ends only when every caller's has (its cancellation then takes effect
// between attempts, as for any transition), with the latest of their
// deadlines when each has one, for the connection's timeouts.
func batchContext[S, T any](batch []*Op[S, T]) (context.Context, context.CancelFunc) {
	if len(batch) == 1 {
		return batch[0].ctx, nothing
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
	cancelDeadline := context.CancelFunc(nothing)
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

// nothing is a func that does nothing. A func literal in generic code
// carries its type parameters' dictionary, and so costs an allocation
// each time: this one costs none.
func nothing() {}
