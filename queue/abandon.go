package queue

import (
	"context"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
)

// Abandon records that r's unit has run past the build's max unit duration
// (elapsedMS so far). The worker then stops renewing its hold, so another
// worker may reclaim the unit once it has been idle for the reclaim timeout.
// The entry itself is left as it is. ErrStale: the hold was already lost.
func (b *Build) Abandon(ctx context.Context, r Reservation, elapsedMS float64) (err error) {
	defer func(start time.Time) { b.meter.observe(ctx, ModeAbandoned, statusOf(err, StatusOK), start) }(time.Now())
	if err := r.check(); err != nil {
		return err
	}
	if err := checkMS("elapsed", elapsedMS); err != nil {
		return err
	}
	p := &abandonPlan{fencedOp: opOf(ModeAbandoned, r, false), sc: b.schema, elapsedMS: elapsedMS}
	return b.core.fenced(ctx, &p.fencedOp, p)
}

// abandonPlan is the abandonment of r after elapsedMS.
type abandonPlan struct {
	fencedOp
	sc        *schema
	elapsedMS float64
}

// decide: r still held (holding), then the abandoned event.
func (p *abandonPlan) decide(c rueidis.DedicatedClient, h held, _ guards, _ *tailState, _ string, writes rueidis.Commands) (rueidis.Commands, error) {
	r := p.Subject
	if err := holding(r, h); err != nil {
		return nil, err
	}
	ev, err := events.Abandoned{Head: head(r, h), ElapsedMS: p.elapsedMS, Stream: string(r.Stream), EntryID: r.EntryID}.Encode()
	if err != nil {
		return nil, err
	}
	return append(writes,
		p.sc.appendEvent(c, ev),
		p.sc.touchWorker(c, r.WorkerID, h.worker, h.now, keepCurrent, 0),
	), nil
}
