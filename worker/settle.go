package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/testresults"
)

// settle gives res its effect on the build (docs/design.md#finalize,
// docs/design.md#requeue): passed units
// are finalized; failed ones requeued while the build's retry budget
// allows, else finalized failed; a result whose reservation was lost is
// discarded and recorded as stale_rejected. The attempt's output is written
// only when its result counts. It runs to the end even after ctx ends, for
// up to Timeout: a result in hand is not thrown away.
func (w *worker) settle(ctx context.Context, r queue.Reservation, res Result) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.Timeout)
	defer cancel()
	qr := queue.Result{DurationMS: float64(res.Duration) / float64(time.Millisecond),
		TestResults: testresults.Encode(res.Tests, testresults.DefaultLimit)}
	if len(res.Errors) > 0 || !res.passed() {
		qr.Errors = events.EncodeErrors(res.Errors)
	}
	var (
		err error
		q   queue.Requeued
		op  = events.OperationFinalize
	)
	switch {
	case res.passed():
		qr.Outcome = events.OutcomePassed
		err = w.build.Finalize(sctx, r, qr)
	case res.NoRequeue:
		qr.Outcome, qr.Reason = events.OutcomeFailed, events.ReasonTestFailure
		err = w.build.Finalize(sctx, r, qr)
	default:
		op = events.OperationRequeue
		qr.FailureSummary = res.failureSummary()
		q, err = w.build.Requeue(sctx, r, qr, w.cfg.budgets())
	}
	if err == nil {
		w.measure(r, res)
	}
	switch {
	case errors.Is(err, queue.ErrStale):
		w.recordStale(ctx, r, op)
		w.logf("reservation for %s is stale; result discarded", r.UnitID)
		return nil
	case err != nil:
		// The error names the unit: its result may be lost, or, when the
		// commit's outcome is unknown, recorded without its output shown.
		// The settlement ignores the worker's stop, so a deadline here is
		// its own (Redis silent for Timeout), not a stop to pass over in
		// silence.
		if sctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("Redis did not answer within %ss (timeout)", seconds(w.cfg.Timeout))
		}
		verb := "finalizing"
		if op == events.OperationRequeue {
			verb = "requeueing"
		}
		return w.fail(context.WithoutCancel(ctx), events.PhaseRedis, r.UnitID, fmt.Errorf("%s %s: %w", verb, r.UnitID, err))
	case q.Requeued:
		w.logf("Retrying %s (retry %d of %d; next attempt %d)%s",
			r.UnitID, q.RetryIndex, w.manifest.Budgets.MaxRequeues, q.RetryIndex+1, colond(res.failureSummary()))
		return nil
	}
	w.writeOutput(ctx, r, res.Output)
	return nil
}

// writeOutput prints the output of an attempt whose result counts. A
// failing writer is recorded (phase formatter) and does not stop the
// worker: the result is already settled.
func (w *worker) writeOutput(ctx context.Context, r queue.Reservation, out []byte) {
	if len(out) == 0 {
		return
	}
	w.logMu.Lock()
	_, err := w.cfg.Output.Write(out)
	w.logMu.Unlock()
	if err != nil {
		w.recordError(ctx, events.PhaseFormatter, r.UnitID, fmt.Errorf("writing the output of %s: %w", r.UnitID, err), nil)
	}
}
