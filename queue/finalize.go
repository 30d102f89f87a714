package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
)

// Result is the outcome of one attempt at a unit, as a worker settles it.
type Result struct {
	// Outcome is "passed" or "failed".
	Outcome string
	// DurationMS is how long the attempt ran, in milliseconds.
	DurationMS float64
	// Reason says why a failed unit failed (for a worker's own finalize:
	// "test_failure"); empty is written as null.
	Reason string
	// FailureSummary is a one-line summary of a failure, used by Requeue.
	FailureSummary string
	// Errors is the attempt's error payload (see events.EncodeErrors), a JSON
	// value embedded in the event; empty is written as null.
	Errors json.RawMessage
	// TestResults is the attempt's per-test results (see
	// testresults.Encode), kept beside the attempt log, never in it, when
	// the settlement commits; empty keeps nothing. At most
	// MaxTestResultsBytes of valid JSON.
	TestResults json.RawMessage
}

func (res Result) check() error {
	if err := checkMS("duration", res.DurationMS); err != nil {
		return err
	}
	if len(res.Errors) > 0 && !json.Valid(res.Errors) {
		return errInvalid("errors payload is not valid JSON: %.80q", res.Errors)
	}
	return checkTestResults(res.TestResults)
}

// Finalize settles r for good with res: the entry is acknowledged, a
// finalized event is appended, the build's finalized count grows by one and
// the worker's processed count too. ErrStale means the reservation was lost
// (reclaimed, or already settled): nothing was written, and the result must
// be discarded.
func (b *Build) Finalize(ctx context.Context, r Reservation, res Result) (err error) {
	defer func(start time.Time) { b.meter.observe(ctx, ModeFinalize, statusOf(err, StatusOK), start) }(time.Now())
	if err := r.check(); err != nil {
		return err
	}
	if res.Outcome != events.OutcomePassed && res.Outcome != events.OutcomeFailed {
		return errInvalid("outcome %q of unit %q is neither %q nor %q", res.Outcome, r.UnitID, events.OutcomePassed, events.OutcomeFailed)
	}
	if err := res.check(); err != nil {
		return err
	}
	p := &finalizePlan{fencedOp: opOf(ModeFinalize, r, false), sc: b.schema, res: res}
	return b.core.fenced(ctx, &p.fencedOp, p)
}

// finalizePlan is the finalize of r with res.
type finalizePlan struct {
	fencedOp
	sc  *schema
	res Result
}

// decide: r still held (holding), then the entry settled for good.
func (p *finalizePlan) decide(c rueidis.DedicatedClient, h held, g guards, _ *tailState, token string, writes rueidis.Commands) (rueidis.Commands, error) {
	r, res := p.Subject, p.res
	if err := holding(r, h); err != nil {
		return nil, err
	}
	ev, err := events.Finalized{
		Head:    head(r, h),
		Outcome: res.Outcome, DurationMS: res.DurationMS, Reason: res.Reason, Errors: res.Errors,
		Stream: string(r.Stream), EntryID: r.EntryID,
	}.Encode()
	if err != nil {
		return nil, err
	}
	cmds := p.sc.finalizeEntry(c, r.Stream, r.EntryID, g.entry, token, ev, writes)
	cmds = p.sc.writeTestResults(c, r, res.TestResults, cmds)
	return append(cmds, p.sc.touchWorker(c, r.WorkerID, h.worker, h.now, clearCurrent, 1)), nil
}

// finalizeEntry is the terminal step shared by finalize, an exhausted
// requeue and an exhausted reclaim: acknowledge the entry, append the
// finalized event, count the unit finalized, and retire the entry's guard,
// which aborts anyone still deciding on the entry.
func (sc *schema) finalizeEntry(c rueidis.DedicatedClient, s Stream, entryID, guard, token string, event []byte, cmds rueidis.Commands) rueidis.Commands {
	cmds = append(cmds,
		c.B().Xack().Key(sc.keys.stream(s)).Group(Group).Id(entryID).Build(),
		sc.appendEvent(c, event),
		c.B().Hincrby().Key(sc.keys.Meta).Field("finalized_count").Increment(1).Build(),
	)
	return sc.dropGuard(c, cmds, guard, token)
}
