package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// Heartbeat renews the worker's hold on r: the entry's idle time starts over
// (XCLAIM JUSTID, which keeps the delivery count), the worker's record shows
// it alive on r's unit, and the build's TTLs are renewed. ErrStale means the
// entry was reclaimed or settled: stop renewing, and expect the settlement to
// be refused. Unlike the other fenced transitions, a heartbeat does not read
// the unit's state, so a missing one is not reported here.
func (b *Build) Heartbeat(ctx context.Context, r Reservation) (err error) {
	defer func(start time.Time) { b.meter.observe(ctx, ModeHeartbeat, statusOf(err, StatusOK), start) }(time.Now())
	if err := r.check(); err != nil {
		return err
	}
	p := &heartbeatPlan{fencedOp: opOf(ModeHeartbeat, r, false), sc: b.schema}
	return b.core.fenced(ctx, &p.fencedOp, p)
}

// heartbeatPlan is a heartbeat of r.
type heartbeatPlan struct {
	fencedOp
	sc *schema
}

// decide: meta present and r held at its delivery; a heartbeat does not
// read the unit's state.
func (p *heartbeatPlan) decide(c rueidis.DedicatedClient, h held, g guards, _ *tailState, token string, writes rueidis.Commands) (rueidis.Commands, error) {
	r := p.Subject
	if !h.metaExists {
		return nil, fmt.Errorf("%w: meta is missing or holds no state (unit %q)", ErrCorrupt, r.UnitID)
	}
	if !fence.Holds(h.row, h.pending, fence.Expect{EntryID: r.EntryID, Owner: r.WorkerID, DeliveryCount: r.DeliveryCount}) {
		return nil, fmt.Errorf("%w: %s %s is not held by %q at delivery %d", ErrStale, r.Stream, r.EntryID, r.WorkerID, r.DeliveryCount)
	}
	if h.workerErr != nil {
		return nil, h.workerErr
	}
	return append(writes,
		// JUSTID keeps the delivery count in Redis; RETRYCOUNT says it
		// again for servers that count a JUSTID claim (miniredis, behind
		// `hopper run`), so the reservation's fence still holds there.
		c.B().Xclaim().Key(p.sc.keys.stream(r.Stream)).Group(Group).Consumer(r.WorkerID).MinIdleTime("0").Id(r.EntryID).
			Retrycount(h.row.DeliveryCount).Justid().Build(),
		// The idle time changed: a reclaim that judged it must look again.
		p.sc.setGuard(c, g.entry, token),
		p.sc.touchWorker(c, r.WorkerID, h.worker, h.now, setCurrent(r.UnitID), 0),
	), nil
}
