package queue

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/events"
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
	p := &requeuePlan{fencedOp: opOf(ModeRequeue, r, true), sc: b.schema, res: res, caps: caps}
	if err = b.core.fenced(ctx, &p.fencedOp, p); err != nil {
		return Requeued{}, err
	}
	return p.out, nil
}

// requeuePlan is the requeue of r's failed attempt res under caps; out is
// its outcome, once it decided.
type requeuePlan struct {
	fencedOp
	sc   *schema
	res  Result
	caps Budgets
	out  Requeued
}

// decide: r still held, then the budgets, as frozen in meta and read from
// the tail (t), say whether the unit goes back on the priority stream or
// is finalized failed.
func (p *requeuePlan) decide(c rueidis.DedicatedClient, h held, g guards, t *tailState, token string, writes rueidis.Commands) (rueidis.Commands, error) {
	r, res := p.Subject, p.res
	p.out = Requeued{}
	if err := holding(r, h); err != nil {
		return nil, err
	}
	decision := budget.DecideRequeue(h.state, budget.Requeue{
		MaxRequeues:   budget.Frozen(t.maxRequeues, t.okMax, float64(p.caps.MaxRequeues)),
		Tolerance:     budget.Frozen(t.tolerance, t.okTolerance, p.caps.RequeueTolerance),
		TotalUnits:    budget.Count(t.total, t.okTotal),
		RequeuedUnits: t.inRetry,
	})
	if !decision.Requeue {
		return p.exhausted(c, h, g, token, writes)
	}
	newID, err := t.next(h.now)
	if err != nil {
		return nil, err
	}
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
	p.out = Requeued{Requeued: true, RetryIndex: after.RetryIndex, NewEntryID: newID}
	if decision.EntersRetry {
		t.inRetry++ // the next requeue of the batch counts this one
	}
	rq := requeueing{r: r, h: h, entry: g.entry, token: token, state: after.Encode(), newID: newID, entersRetry: decision.EntersRetry}
	return p.sc.requeueWrites(c, rq, ev, res, writes), nil
}

// exhausted finalizes r failed: its retry budget is spent.
func (p *requeuePlan) exhausted(c rueidis.DedicatedClient, h held, g guards, token string, writes rueidis.Commands) (rueidis.Commands, error) {
	r, res := p.Subject, p.res
	ev, err := events.RetryBudgetExhausted{
		Head:       head(r, h),
		DurationMS: res.DurationMS, Errors: res.Errors, FailureSummary: res.FailureSummary,
		Stream: string(r.Stream), EntryID: r.EntryID,
	}.Encode()
	if err != nil {
		return nil, err
	}
	p.out = Requeued{RetryIndex: h.state.RetryIndex}
	cmds := p.sc.finalizeEntry(c, r.Stream, r.EntryID, g.entry, token, ev, writes)
	cmds = p.sc.writeTestResults(c, r, res.TestResults, cmds)
	return append(cmds, p.sc.touchWorker(c, r.WorkerID, h.worker, h.now, clearCurrent, 1)), nil
}

// requeueing is what a requeue within budget writes of r: its new state,
// its new priority entry newID, and whether the unit enters retry.
type requeueing struct {
	r           Reservation
	h           held
	entry       string // r's entry guard
	token       string
	state       []byte
	newID       string
	entersRetry bool
}

// requeueWrites appends to cmds the writes of a requeue within budget: the unit's new
// state, its entry acknowledged and a new one on the priority stream, the
// requeued event ev, the worker's record, the tail guard moved and the old
// entry's guard retired.
func (sc *schema) requeueWrites(c rueidis.DedicatedClient, q requeueing, ev []byte, res Result, cmds rueidis.Commands) rueidis.Commands {
	r, k := q.r, sc.keys
	if q.entersRetry {
		cmds = append(cmds, c.B().Hincrby().Key(k.Meta).Field("requeued_units_count").Increment(1).Build())
	}
	cmds = append(cmds,
		c.B().Hset().Key(k.UnitState).FieldValue().FieldValue(r.UnitID, string(q.state)).Build(),
		c.B().Xack().Key(k.stream(r.Stream)).Group(Group).Id(r.EntryID).Build(),
		c.B().Xadd().Key(k.Priority).Id(q.newID).FieldValue().FieldValue("id", r.UnitID).FieldValue("type", r.UnitType).Build(),
		sc.appendEvent(c, ev),
		sc.touchWorker(c, r.WorkerID, q.h.worker, q.h.now, clearCurrent, 1),
		sc.setGuard(c, k.tailGuard(), q.token),
	)
	cmds = sc.writeTestResults(c, r, res.TestResults, cmds)
	return sc.dropGuard(c, cmds, q.entry, q.token)
}

// tailState is what the requeues of a batch read, and carry from one to the
// next, of the build's budgets and the priority stream's tail.
type tailState struct {
	maxRequeues, tolerance, total string
	okMax, okTolerance, okTotal   bool
	inRetry                       int64 // units in retry, this batch's included
	info                          rueidis.RedisResult
	last                          string // the tail, once read
}

// tailReadCount is the number of commands tailReads returns.
const tailReadCount = 2

// tailReads are the batch's reads for requeues: the frozen budgets and
// counts in meta, and the priority stream's last id.
func tailReads(e *core, c rueidis.DedicatedClient) []rueidis.Completed {
	return []rueidis.Completed{
		c.B().Hmget().Key(e.schema.keys.Meta).Field("max_requeues", "requeue_tolerance", "total_units", "requeued_units_count").Build(),
		c.B().XinfoStream().Key(e.schema.keys.Priority).Build(),
	}
}

func readTail(res []rueidis.RedisResult) (*tailState, error) {
	meta, err := res[0].ToArray()
	if err != nil || len(meta) != 4 {
		return nil, fmt.Errorf("queue: reading budgets from meta: %v", err)
	}
	field := func(i int) (string, bool) {
		s, err := meta[i].ToString()
		return s, err == nil
	}
	t := &tailState{info: res[1]}
	t.maxRequeues, t.okMax = field(0)
	t.tolerance, t.okTolerance = field(1)
	t.total, t.okTotal = field(2)
	requeued, ok := field(3)
	t.inRetry = budget.Count(requeued, ok)
	return t, nil
}

// next picks the id of the next unit put back on the priority stream.
func (t *tailState) next(now int64) (string, error) {
	if t.last == "" {
		last, err := lastGeneratedID(t.info)
		if err != nil {
			return "", err
		}
		t.last = last
	}
	t.last = nextEntryID(t.last, now)
	return t.last, nil
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
