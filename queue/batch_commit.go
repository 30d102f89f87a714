package queue

import (
	"context"

	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// writesPerOp is room for the writes of one fenced transition, the
// build's TTL renewal included: a requeue's, the longest, fit.
const writesPerOp = 16

// commitBatch commits ops (distinct workers, entries and units) in one
// transaction. An op refused on what it read (stale, corrupt) gets its
// refusal and writes nothing; the others go on. An error of the commit
// itself is that of every op that had something to write. from is the
// batch's first round trip, made behind the commit before it; behind, what
// its commit carries (see chain.go and kept_reads.go).
func (e *engine) commitBatch(ctx context.Context, ops []*fencedOp, from *prefetch, behind []txn.Behind[rueidis.DedicatedClient]) {
	k := e.schema.keys
	trip := from.tripOr(e, ops)
	shared, gs := trip.shared, trip.gs
	kept := from != nil && from.kept
	err := e.commitLinked(ctx, ops[0].mode, gs[0].worker, link{From: from.held(), Behind: behind, Final: e.keepRefused(ops)}, func(ctx context.Context, c rueidis.DedicatedClient, t *tx) (rueidis.Commands, error) {
		res, arrived := t.First, from.arrivedAt()
		if res == nil {
			res, arrived = e.clock.TimeTrip(ctx, c, e.appendTripCommands(make(rueidis.Commands, 0, shared+2+len(ops)), c, ops, trip)...)
		}
		if err := res[0].Error(); err != nil {
			return nil, err
		}
		var common held
		var err error
		if common.metaExists, err = e.schema.metaFound(res[1]); err != nil {
			return nil, refusalOnKept(t.First != nil && kept, err)
		}
		if common.metaExists {
			if common.now, err = e.tripNow(ctx, c, trip, res, arrived); err != nil {
				return nil, err
			}
			t.Now = common.now
		}
		var ts *tailState
		if trip.tail {
			if ts, err = readTail(res[shared-tailReadCount : shared]); err != nil {
				return nil, err
			}
		}
		writes := t.Writes(c.B(), writesPerOp*len(ops))
		replies := trip.reads.replies(len(ops), res[shared:shared+trip.reads.count(len(ops))])
		for i, op := range ops {
			h := common
			if op.err = replies.held(k, i, op, &h); op.err != nil {
				continue
			}
			e.entries.learnChecked(trip.reads, i, op, h)
			before := writes
			if writes, op.err = op.plan.decide(c, h, gs[i], ts, t.Token, writes); op.err != nil {
				writes = before // refused: it writes nothing
				continue
			}
			if i > 0 {
				// The runner records the token on the first op's worker
				// guard; every other worker whose record changes gets it
				// too, and only such a worker: the guards' memory counts
				// what is recorded (machinery.GuardMemo.Plan).
				writes = e.appendTokenRecord(writes, c, t, gs[i].worker)
			}
		}
		if refusal := firstRefusal(ops); refusal != nil && t.First != nil && kept {
			return nil, refusalOnKept(true, refusal)
		}
		if len(writes) == 1 {
			return nil, nil // every op was refused: MULTI alone, nothing to commit
		}
		if len(ops) > 1 {
			writes = txn.MergeWrites(c.B(), writes)
		}
		return e.schema.renew(c, writes), nil
	})
	for _, op := range ops {
		if err != nil && op.err == nil {
			// An op refused on what it read keeps its refusal: it had
			// nothing to commit. The others share the commit's fate.
			op.err = err
		}
	}
}
