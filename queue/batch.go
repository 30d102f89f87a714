package queue

import (
	"context"
	"time"

	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue/internal/engine"
	"github.com/hopper-queue/hopper/queue/internal/sched"
	"github.com/redis/rueidis"
)

// A fenced transition (delivery accounting, heartbeat, finalize, requeue,
// abandoned) is a plan: it embeds its fencedOp, holds what it was called
// with and its outputs, and decides (fencedPlan). The engine runs it alone
// or in a batch with others (package engine); this file is what the engine
// asks of such a batch: the shape of its first round trip (batch_reads.go)
// and its decisions.

// fencedOp is one fenced transition of a reservation, as the engine runs
// it.
type fencedOp = engine.Op[Reservation, batchTrip]

// fencedPlan is a fenced transition's decision: on what was read for its
// reservation (h), its guards g, the batch's tail state t (requeues) and
// the attempt's token, writes with its own appended, or its refusal.
// Appending to the batch's writes spares every transition a slice of its
// own; a plan that embeds its fencedOp is one allocation.
type fencedPlan interface {
	decide(c rueidis.DedicatedClient, h held, g guards, t *tailState, token string, writes rueidis.Commands) (rueidis.Commands, error)
}

// opOf is the fencedOp of a transition mode on r; tail: it may put r's
// unit back on the priority stream, so its batch watches the tail guard
// and reads the budgets (see requeue.go), and no other batch in flight
// holds such an op: a Build's requeues never race each other on the tail.
func opOf(mode string, r Reservation, tail bool) fencedOp {
	return fencedOp{Mode: mode, Subject: r,
		Claim: sched.Claims{Worker: r.WorkerID, Unit: r.UnitID, Stream: string(r.Stream), Entry: r.EntryID, Tail: tail}}
}

// readsState tells whether op decides on its unit's state: every fenced
// transition but the heartbeat.
func readsState(op *fencedOp) bool { return op.Mode != ModeHeartbeat }

// fenced runs the fenced transition op, decided by plan.
func (e *core) fenced(ctx context.Context, op *fencedOp, plan fencedPlan) error {
	op.Plan = plan
	return refusedCommand(e.eng.Do(ctx, op))
}

// holding is the check of every fenced transition but the heartbeat's: meta
// present, r still held, the unit's state present (see held.settled).
func holding(r Reservation, h held) error {
	return h.settled(r, fence.Expect{EntryID: r.EntryID, Owner: r.WorkerID, DeliveryCount: r.DeliveryCount})
}

// Decide decides each op of a batch on res, the replies of its first round
// trip, shaped as trip, that arrived at mono time arrived (engine.Domain).
func (e *core) Decide(ctx context.Context, c rueidis.DedicatedClient, t *engine.Txn, ops []*fencedOp, trip batchTrip, res []rueidis.RedisResult, arrived time.Duration) (rueidis.Commands, error) {
	if err := res[0].Error(); err != nil {
		return nil, err
	}
	var common held
	var err error
	if common.metaExists, err = e.schema.metaFound(res[1]); err != nil {
		return nil, err
	}
	if common.metaExists {
		if common.now, err = e.tripNow(ctx, c, trip, res, arrived); err != nil {
			return nil, err
		}
		t.Now = common.now
	}
	var ts *tailState
	if trip.tail {
		if ts, err = readTail(res[trip.shared-tailReadCount : trip.shared]); err != nil {
			return nil, err
		}
	}
	writes := t.Writes(c.B(), writesPerOp*len(ops))
	replies := trip.reads.replies(len(ops), res[trip.shared:trip.shared+trip.reads.count(len(ops))])
	for i, op := range ops {
		h := common
		if op.Err = replies.held(e.schema.keys, i, op, &h); op.Err != nil {
			continue
		}
		e.entries.learnChecked(trip.reads, i, op, h)
		before := writes
		if writes, op.Err = op.Plan.(fencedPlan).decide(c, h, trip.gs[i], ts, t.Token, writes); op.Err != nil {
			writes = before // refused: it writes nothing
			continue
		}
		if i > 0 {
			// The runner records the token on the first op's worker
			// guard; every other worker whose record changes gets it
			// too, and only such a worker: the guards' memory counts
			// what is recorded (machinery.GuardMemo.Plan).
			writes = e.eng.RecordToken(writes, c, t, trip.gs[i].worker)
		}
	}
	return writes, nil
}

// writesPerOp is room for the writes of one fenced transition, the
// build's TTL renewal included: a requeue's, the longest, fit.
const writesPerOp = 16
