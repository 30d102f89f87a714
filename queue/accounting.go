package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// Delivery is what accounting for a fresh delivery learns: the entry's
// delivery count and the unit's budget counters, which complete the
// worker's Reservation.
type Delivery struct {
	DeliveryCount int64
	RetryIndex    int64
	ReclaimCount  int64
}

// AccountDelivery records that worker read entryID of stream (with a plain
// XREADGROUP) for unitID: a delivered event, the worker's current unit, and
// renewed TTLs. It is fenced by owner only, and returns the delivery count
// that fences everything after it. ErrStale means someone reclaimed the entry
// between the read and this call: the worker took nothing and nothing was
// recorded. ErrCorrupt means meta or the unit's state is missing.
func (b *Build) AccountDelivery(ctx context.Context, worker string, stream Stream, entryID, unitID string) (Delivery, error) {
	return b.core.accountDelivery(ctx, worker, stream, entryID, unitID)
}

// accountDelivery runs delivery accounting's plan; reservations run it
// on every entry they take.
func (e *core) accountDelivery(ctx context.Context, worker string, stream Stream, entryID, unitID string) (_ Delivery, err error) {
	defer func(start time.Time) { e.meter.observe(ctx, ModeDeliveryAccounting, statusOf(err, StatusOK), start) }(time.Now())
	r := Reservation{WorkerID: worker, Stream: stream, EntryID: entryID, UnitID: unitID, DeliveryCount: 1}
	if err := r.check(); err != nil {
		return Delivery{}, err
	}
	p := &deliveryPlan{fencedOp: opOf(ModeDeliveryAccounting, r, false), sc: e.schema}
	if err := e.fenced(ctx, &p.fencedOp, p); err != nil {
		return Delivery{}, err
	}
	return p.d, nil
}

// deliveryPlan is delivery accounting of r, whose entry was just
// delivered to its worker; d is what it read, once it decided.
type deliveryPlan struct {
	fencedOp
	sc *schema
	d  Delivery
}

// decide: the entry still held at its delivery, the delivered event and
// the worker's record.
func (p *deliveryPlan) decide(c rueidis.DedicatedClient, h held, _ guards, _ *tailState, _ string, writes rueidis.Commands) (rueidis.Commands, error) {
	r := p.Subject
	if err := h.settled(r, fence.Expect{EntryID: r.EntryID, Owner: r.WorkerID}); err != nil {
		return nil, err
	}
	ev, err := events.Delivered{
		Head:   head(r, h),
		Stream: string(r.Stream), EntryID: r.EntryID, DeliveryCount: h.row.DeliveryCount,
	}.Encode()
	if err != nil {
		return nil, err
	}
	p.d = Delivery{DeliveryCount: h.row.DeliveryCount, RetryIndex: h.state.RetryIndex, ReclaimCount: h.state.ReclaimCount}
	return append(writes,
		p.sc.appendEvent(c, ev),
		p.sc.touchWorker(c, r.WorkerID, h.worker, h.now, setCurrent(r.UnitID), 0),
	), nil
}

// settled applies the checks every fenced transition makes, in their fixed
// order (docs/design.md#transitions): meta present, the fence, the unit's
// state readable and present, the worker's record readable. Between the
// fence and the state, one the transition script does not make: the entry
// carries the caller's unit (see entryUnitCheck, docs/design.md#entry-ids).
func (h held) settled(r Reservation, want fence.Expect) error {
	switch {
	case !h.metaExists:
		return fmt.Errorf("%w: meta is missing or holds no state (unit %q)", ErrCorrupt, r.UnitID)
	case !fence.Holds(h.row, h.pending, want):
		return fmt.Errorf("%w: %s %s is not held by %q at delivery %d", ErrStale, r.Stream, r.EntryID, want.Owner, want.DeliveryCount)
	}
	if err := entryUnitCheck(r, h); err != nil {
		return err
	}
	switch {
	case h.stateErr != nil:
		return h.stateErr
	case !h.hasState:
		return fmt.Errorf("%w: unit_state of %q is missing", ErrCorrupt, r.UnitID)
	}
	return h.workerErr
}

// head is the common head of a unit's event, with the unit's counters as read.
func head(r Reservation, h held) events.Head {
	return events.Head{
		UnitID: r.UnitID, WorkerID: r.WorkerID,
		RetryIndex: h.state.RetryIndex, ReclaimCount: h.state.ReclaimCount,
		AtMS: h.now,
	}
}
