package engine

import (
	"context"

	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// commitBatch commits ops (distinct workers, entries and units) in one
// transaction. An op refused on what it read gets its refusal and writes
// nothing; the others go on. An error of the commit itself is that of
// every op that had no refusal. from is the batch's first round trip, made
// behind the commit before it or kept; behind, what its commit carries
// (see chain.go and kept_reads.go).
func (e *Engine[S, T]) commitBatch(ctx context.Context, ops []*Op[S, T], from *prefetch[S, T], behind []Behind) {
	trip := from.tripOr(e, ops)
	l := link{From: from.held(), Behind: behind, Final: e.keepRefused(ops)}
	err := e.commitLinked(ctx, ops[0].Mode, e.domain.WorkerGuard(ops[0].Claim.Worker), l, func(ctx context.Context, c Conn, t *Txn) (rueidis.Commands, error) {
		res, arrived := t.First, from.arrivedAt()
		if res == nil {
			res, arrived = e.Clock.TimeTrip(ctx, c, e.domain.AppendTrip(nil, c, ops, trip)...)
		}
		writes, err := e.domain.Decide(ctx, c, t, ops, trip, res, arrived)
		writes, err = onKept(t.First != nil && from.kept, ops, writes, err)
		if err != nil || len(writes) <= 1 {
			return nil, err // every op was refused: MULTI alone, nothing to commit
		}
		if len(ops) > 1 {
			writes = txn.MergeWrites(c.B(), writes)
		}
		return e.domain.Renew(c, writes), nil
	})
	for _, op := range ops {
		if err != nil && op.Err == nil {
			// An op refused on what it read keeps its refusal: it had
			// nothing to commit. The others share the commit's fate.
			op.Err = err
		}
	}
}

// onKept is the rule every path of the engine keeps: reads made before
// the call (kept reads, a kept watch) may back a commit, whose EXEC checks
// them, never a refusal, which nothing checks. A decision on them (kept:
// writes, err, and each op's Err) that fails, or refuses any op, starts
// the transition over on fresh reads, and leaves no op its refusal.
func onKept[S, T any](kept bool, ops []*Op[S, T], writes rueidis.Commands, err error) (rueidis.Commands, error) {
	if !kept {
		return writes, err
	}
	refused := err != nil
	for _, op := range ops {
		refused = refused || op.Err != nil
	}
	if !refused {
		return writes, nil
	}
	for _, op := range ops {
		op.Err = nil
	}
	return nil, txn.ErrRetry
}

// keepRefused is the Final of a batch's commit (see txn.Link): a lone
// transition refused on fresh reads keeps its connection, still watching
// its worker guard, for the transition its worker calls next
// (Domain.KeepAfter).
func (e *Engine[S, T]) keepRefused(ops []*Op[S, T]) func(Conn, func()) bool {
	if len(ops) != 1 || e.watches.off {
		return nil
	}
	return func(c Conn, release func()) bool {
		op := ops[0]
		mode := e.domain.KeepAfter(op.Err)
		if mode == "" {
			return false
		}
		e.watches.put(op.Claim.Worker, mode, txn.Held[Conn]{Conn: c, Release: release, Replies: []rueidis.RedisResult{}})
		return true
	}
}
