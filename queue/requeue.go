package queue

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// Budgets are a worker's own retry and reclaim caps. A build freezes its caps
// into meta when it is published, and those win: these values only fill in
// for a meta that lacks them.
type Budgets struct {
	MaxRequeues      int     // retries per unit
	RequeueTolerance float64 // share (0..1) of the build's units that may enter retry
	MaxReclaims      int     // times a unit may be taken from a lost owner
}

func (bg Budgets) check() error {
	switch {
	case bg.MaxRequeues < 0:
		return errInvalid("max requeues %d is negative", bg.MaxRequeues)
	case math.IsNaN(bg.RequeueTolerance) || bg.RequeueTolerance < 0 || bg.RequeueTolerance > 1:
		return errInvalid("requeue tolerance %v is not between 0 and 1", bg.RequeueTolerance)
	case bg.MaxReclaims < 0:
		return errInvalid("max reclaims %d is negative", bg.MaxReclaims)
	}
	return nil
}

// Requeued is the outcome of Requeue.
type Requeued struct {
	// Requeued is true when the unit went back on the priority stream for
	// another attempt; false when the retry budget was spent and the unit
	// was finalized as failed (reason retry_budget_exhausted).
	Requeued bool
	// RetryIndex is the unit's retry index after the transition.
	RetryIndex int64
	// NewEntryID is the unit's new priority entry, when Requeued.
	NewEntryID string
}

// Requeue settles a failed attempt of r: within budget, the unit goes back
// on the priority stream (served before untouched units) with its retry
// index one higher; past it, the unit is finalized as failed. Either way the
// entry is acknowledged and the worker's processed count grows.
// ErrStale: the reservation was lost, nothing was written.
//
// Requeues of one Build that arrive while another is committing are
// committed together, in one transaction, in the order they arrived (see
// requeue_batch.go); each still gets its own outcome.
func (b *Build) Requeue(ctx context.Context, r Reservation, res Result, caps Budgets) (out Requeued, err error) {
	defer func(start time.Time) {
		ok := StatusFinalized
		if out.Requeued {
			ok = StatusRequeued
		}
		b.meter.observe(ctx, ModeRequeue, statusOf(err, ok), start)
	}(time.Now())
	if err := r.check(); err != nil {
		return Requeued{}, err
	}
	if err := checkID("unit type", r.UnitType); err != nil {
		return Requeued{}, err
	}
	if err := res.check(); err != nil {
		return Requeued{}, err
	}
	if err := caps.check(); err != nil {
		return Requeued{}, err
	}
	return b.requeues.do(ctx, b, &requeueCall{r: r, res: res, caps: caps})
}

// requeueBatch commits calls (distinct workers, entries and units) in one
// transaction, as if each ran alone in turn: the budgets' count of units in
// retry and the priority tail carry from one to the next. A call whose
// reservation was lost, or whose unit is corrupt, gets its error and writes
// nothing; the others go on. An error of the commit itself is every call's.
func (b *Build) requeueBatch(ctx context.Context, calls []*requeueCall) {
	tail := b.keys.tailGuard()
	gs := make([]guards, len(calls))
	watch := []string{tail}
	for i, call := range calls {
		gs[i] = b.guardsOf(call.r)
		watch = append(watch, gs[i].worker)
		if entryGuards {
			watch = append(watch, gs[i].entry)
		}
	}
	err := b.commit(ctx, ModeRequeue, gs[0].worker, func(ctx context.Context, c rueidis.DedicatedClient, token string) (rueidis.Commands, error) {
		// The tail guard orders these requeues with every other requeue:
		// they pick priority ids from the same tail and read the same count
		// of units in retry. Nothing else writes it.
		const shared = 5 // WATCH, EXISTS meta, TIME, HMGET meta, XINFO STREAM
		cmds := make(rueidis.Commands, 0, shared+3*len(calls))
		cmds = append(cmds,
			c.B().Watch().Key(watch...).Build(),
			c.B().Exists().Key(b.keys.Meta).Build(),
			c.B().Time().Build(),
			c.B().Hmget().Key(b.keys.Meta).Field("max_requeues", "requeue_tolerance", "total_units", "requeued_units_count").Build(),
			c.B().XinfoStream().Key(b.keys.Priority).Build(),
		)
		for _, call := range calls {
			reads := b.entryReads(c, call.r)
			cmds = append(cmds, reads[:]...)
		}
		res := c.DoMulti(ctx, cmds...)
		if err := res[0].Error(); err != nil {
			return nil, err
		}
		n, err := res[1].AsInt64()
		if err != nil {
			return nil, err
		}
		var common held
		if common.metaExists = n == 1; common.metaExists {
			if common.now, err = nowMS(res[2]); err != nil {
				return nil, err
			}
		}
		meta, err := res[3].ToArray()
		if err != nil || len(meta) != 4 {
			return nil, fmt.Errorf("queue: reading budgets from meta: %v", err)
		}
		field := func(i int) (string, bool) {
			s, err := meta[i].ToString()
			return s, err == nil
		}
		maxRequeues, okM := field(0)
		tolerance, okT := field(1)
		total, okTotal := field(2)
		requeued, okR := field(3)
		inRetry := budget.Count(requeued, okR)
		var last string // the priority tail, read once a call needs it
		var writes rueidis.Commands
		for i, call := range calls {
			call.out, call.err = Requeued{}, nil
			h := common
			if h.metaExists {
				pos := shared + 3*i
				if call.err = h.parseEntry(b.keys, call.r, res[pos], res[pos+1], res[pos+2]); call.err != nil {
					continue
				}
			}
			if call.err = h.settled(call.r, fence.Expect{Owner: call.r.WorkerID, DeliveryCount: call.r.DeliveryCount}); call.err != nil {
				continue
			}
			decision := budget.DecideRequeue(h.state, budget.Requeue{
				MaxRequeues:   budget.Frozen(maxRequeues, okM, float64(call.caps.MaxRequeues)),
				Tolerance:     budget.Frozen(tolerance, okT, call.caps.RequeueTolerance),
				TotalUnits:    budget.Count(total, okTotal),
				RequeuedUnits: inRetry,
			})
			if i > 0 {
				// The runner records the token on the first call's worker
				// guard; every other worker whose record changes gets it too.
				writes = append(writes, b.recordToken(c, gs[i].worker, token)...)
			}
			if last == "" && decision.Requeue {
				if last, err = lastGeneratedID(res[4]); err != nil {
					return nil, err
				}
			}
			if writes, err = b.requeueWrites(c, call, h, gs[i], decision, &last, token, writes); err != nil {
				return nil, err
			}
			if decision.EntersRetry {
				inRetry++
			}
		}
		if len(writes) == 0 {
			return nil, nil // every call was refused: nothing to commit
		}
		return b.renew(c, writes), nil
	})
	for _, call := range calls {
		if err != nil && call.err == nil {
			// A call refused on what it read keeps its refusal: it had
			// nothing to commit. The others share the commit's fate.
			call.out, call.err = Requeued{}, err
		}
	}
}

// requeueWrites appends the writes of one requeue decided on h, and sets its
// outcome. last is the priority tail, moved on by a unit put back.
func (b *Build) requeueWrites(c rueidis.DedicatedClient, call *requeueCall, h held, g guards, decision budget.RequeueDecision, last *string, token string, cmds rueidis.Commands) (rueidis.Commands, error) {
	r, res := call.r, call.res
	if !decision.Requeue {
		ev, err := events.RetryBudgetExhausted{
			Head:       head(r, h),
			DurationMS: res.DurationMS, Errors: res.Errors, FailureSummary: res.FailureSummary,
			Stream: string(r.Stream), EntryID: r.EntryID,
		}.Encode()
		if err != nil {
			return nil, err
		}
		call.out = Requeued{RetryIndex: h.state.RetryIndex}
		cmds = b.finalizeEntry(c, r.Stream, r.EntryID, g.entry, token, ev, cmds)
		return append(cmds, b.touchWorker(c, r.WorkerID, h.worker, h.now, clearCurrent, 1)), nil
	}
	newID := nextEntryID(*last, h.now)
	*last = newID
	after := decision.After(h.state)
	hh := head(r, h)
	hh.RetryIndex, hh.ReclaimCount = after.RetryIndex, after.ReclaimCount
	ev, err := events.Requeued{
		Head:       hh,
		DurationMS: res.DurationMS, FailureSummary: res.FailureSummary, Errors: res.Errors,
		Stream: string(r.Stream), EntryID: r.EntryID, NewEntryID: newID,
	}.Encode()
	if err != nil {
		return nil, err
	}
	call.out = Requeued{Requeued: true, RetryIndex: after.RetryIndex, NewEntryID: newID}
	if decision.EntersRetry {
		cmds = append(cmds, c.B().Hincrby().Key(b.keys.Meta).Field("requeued_units_count").Increment(1).Build())
	}
	cmds = append(cmds,
		c.B().Hset().Key(b.keys.UnitState).FieldValue().FieldValue(r.UnitID, string(after.Encode())).Build(),
		c.B().Xack().Key(b.keys.stream(r.Stream)).Group(Group).Id(r.EntryID).Build(),
		c.B().Xadd().Key(b.keys.Priority).Id(newID).FieldValue().FieldValue("id", r.UnitID).FieldValue("type", r.UnitType).Build(),
		b.appendEvent(c, ev),
		b.touchWorker(c, r.WorkerID, h.worker, h.now, clearCurrent, 1),
		b.setGuard(c, b.keys.tailGuard(), token),
	)
	return append(cmds, b.dropGuard(c, g.entry, token)...), nil
}

// lastGeneratedID reads last-generated-id from an XINFO STREAM reply; a
// stream that does not exist yet has generated nothing.
func lastGeneratedID(r rueidis.RedisResult) (string, error) {
	info, err := r.AsMap()
	if err != nil {
		if isNoSuchKey(err) {
			return "0-0", nil
		}
		return "", fmt.Errorf("queue: XINFO STREAM: %w", err)
	}
	m, ok := info["last-generated-id"]
	if !ok {
		return "", fmt.Errorf("queue: XINFO STREAM reply lacks last-generated-id")
	}
	return m.ToString()
}
