package queue

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// ReclaimStatus says what a reclaim did.
type ReclaimStatus int

const (
	// ReclaimNone: no entry had been idle for the timeout.
	ReclaimNone ReclaimStatus = iota
	// ReclaimTaken: the worker now holds an entry taken from an idle owner.
	ReclaimTaken
	// ReclaimFinalized: the idle unit had used up its reclaim budget and was
	// finalized as failed (reason reclaim_budget_exhausted).
	ReclaimFinalized
)

// Reclaimed is the outcome of Reclaim.
type Reclaimed struct {
	Status ReclaimStatus
	// Reservation is the worker's new hold, when Status is ReclaimTaken.
	Reservation Reservation
	// UnitID is the unit taken or finalized.
	UnitID string
	// PreviousWorkerID is the owner the entry was taken from, when known.
	PreviousWorkerID string

	typeMissing bool // the entry has no type field (Transition's reply stops there)
}

// Reclaim takes over one unit whose owner has gone quiet: the oldest entry
// idle for at least timeout, priority stream first, among the first
// fence.ScanWindow pending entries of each stream (the reach of one
// XAUTOCLAIM). Within the unit's reclaim budget the worker now holds it
// (plain XCLAIM: the delivery count grows, fencing the old owner out) and a
// reclaimed event is appended; past it, the unit is finalized as failed.
//
// ErrCorrupt: meta is missing, or the idle unit's state is. In the second
// case the entry may already have changed hands, as it would if the state
// went missing between the check and the claim (docs/design.md#reclaim).
//
// A reclaim that claims takes three round trips when the build has seen the
// entry before (see entry_units.go), four when it has not.
func (b *Build) Reclaim(ctx context.Context, worker string, timeout time.Duration, maxReclaims int) (Reclaimed, error) {
	if err := checkID("worker id", worker); err != nil {
		return Reclaimed{}, err
	}
	if timeout < 0 {
		return Reclaimed{}, errInvalid("reclaim timeout %v is negative", timeout)
	}
	if maxReclaims < 0 {
		return Reclaimed{}, errInvalid("max reclaims %d is negative", maxReclaims)
	}
	return b.core.reclaimOn(ctx, worker, timeout.Milliseconds(), float64(maxReclaims), nil)
}

// reclaimOn runs a reclaim of worker's on timeoutMS (fallbackMax: the
// reclaim budget when meta holds none); its first attempt stands on
// given, a first look already made (a read-ahead's, see read_ahead.go),
// when not nil.
func (e *core) reclaimOn(ctx context.Context, worker string, timeoutMS int64, fallbackMax float64, given *firstLook) (out Reclaimed, err error) {
	defer func(start time.Time) {
		ok := StatusNone
		switch out.Status {
		case ReclaimTaken:
			ok = StatusOK
		case ReclaimFinalized:
			ok = StatusFinalized
		}
		e.meter.observe(ctx, ModeReclaim, statusOf(err, ok), start)
	}(time.Now())
	r := &reclaimer{e: e, worker: worker, wguard: e.schema.workerGuard(worker), timeoutMS: timeoutMS, fallbackMax: fallbackMax, given: given}
	if err = e.commit(ctx, ModeReclaim, r.wguard, r.attempt); err != nil {
		return Reclaimed{}, err
	}
	e.eng.Consumers.Created(worker, r.consumers)
	return r.out, r.corrupt
}

// reclaimer is one Reclaim: who reclaims on what terms, and what its
// latest attempt decided.
type reclaimer struct {
	e           *core
	worker      string
	wguard      string // the worker's guard
	timeoutMS   int64
	fallbackMax float64    // max reclaims when meta holds none
	given       *firstLook // the first attempt's first look, made already; nil: none

	// Of the attempt under way.
	ctx       context.Context
	c         rueidis.DedicatedClient
	t         *tx
	out       Reclaimed
	corrupt   error    // the outcome is CORRUPT, after what the writes did
	consumers []string // the streams (keys) whose group the commit makes worker a consumer of
}

// look is the attempt's first look: the one given, for the first attempt,
// else one made now.
func (r *reclaimer) look() (firstLook, error) {
	if f := r.given; f != nil {
		r.given = nil
		return *f, nil
	}
	return r.firstLook()
}

// attempt is one try of a reclaim, in one to four round trips: the first
// look, unwatched, which usually finds nothing to do; the second,
// watched, which the decision stands on; the states of the units it may
// claim, when the second look could not prefetch them; and the commit
// (docs/design.md#reclaim).
func (r *reclaimer) attempt(ctx context.Context, c rueidis.DedicatedClient, t *tx) (rueidis.Commands, error) {
	r.ctx, r.c, r.t = ctx, c, t
	r.out, r.corrupt, r.consumers = Reclaimed{}, nil, r.consumers[:0]
	first, err := r.look()
	if err != nil {
		return nil, errUnwatched{Err: err}
	}
	if !first.anyCand && len(first.looked) == 0 {
		// Nothing to claim or drop: a walk of both streams that finds
		// nothing still leaves the worker a consumer of both groups on
		// some servers (see machinery.ConsumerPolicy). Creating a consumer twice
		// does nothing, so no guard is needed.
		_, err := r.bare(r.createConsumer(r.createConsumer(nil, StreamPriority), StreamUnits))
		return nil, errUnwatched{Err: err}
	}
	second, err := r.secondLook(first)
	if err != nil {
		return nil, err
	}
	t.Now = second.now
	walks, units, err := second.walk(first.looked, r.timeoutMS)
	if err != nil {
		return nil, err
	}
	states, err := r.e.unitStates(ctx, c, units, second.prefetch, second.prefetched)
	if err != nil {
		return nil, err
	}
	return r.writes(second, walks, states, first.maxReclaims)
}
