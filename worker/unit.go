package worker

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// attempt is what the Func's goroutine hands back.
type attempt struct {
	res       Result
	panicked  error
	backtrace []string
}

// work runs one reservation: the Func beside its heartbeat, then the
// settlement (SPEC sections 5 and 6).
func (w *worker) work(ctx context.Context, r queue.Reservation) error {
	start := w.cfg.Clock.Now()
	unitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan attempt, 1) // buffered: an aborted Func may return after Run did
	go w.attempt(unitCtx, r, done)
	hb := w.startHeartbeat(context.WithoutCancel(ctx), r, start)
	// The abort has its own timer, not the heartbeat's ticks, which a
	// hanging call to Redis would hold back.
	overrun := w.cfg.Clock.After(w.cfg.MaxUnitDuration + w.cfg.Timeout)

	var a attempt
	select {
	case a = <-done:
		hb.finish()
	case <-hb.gone:
		// Running on would only delay the exit that tells why.
		cancel()
		hb.finish()
		return w.fail(ctx, events.PhaseRedis, r.UnitID, hb.corrupt)
	case <-overrun:
		w.logf("Aborting worker: %s exceeded %ss", r.UnitID, seconds(w.cfg.MaxUnitDuration))
		cancel()
		// The unit is stopped now; the heartbeat ends once a call in
		// flight returns, so that nothing Run started outlives it.
		hb.finish()
		return stopErrorf(ErrAborted, w.cfg.WorkerID, "%s ran past %ss (max unit duration) + %ss (timeout)",
			r.UnitID, seconds(w.cfg.MaxUnitDuration), seconds(w.cfg.Timeout))
	}
	res := a.res
	if res.Duration <= 0 {
		res.Duration = w.cfg.Clock.Now().Sub(start)
	}
	if a.panicked != nil {
		w.recordError(ctx, events.PhaseExecution, r.UnitID, a.panicked, a.backtrace)
	}
	switch {
	case hb.corrupt != nil:
		return w.fail(ctx, events.PhaseRedis, r.UnitID, hb.corrupt)
	case hb.lost != nil:
		return stopErrorf(ErrHeartbeatLost, w.cfg.WorkerID, "no renewal of %s succeeded for %ss (timeout): %v",
			r.UnitID, seconds(w.cfg.Timeout), hb.lost)
	case ctx.Err() != nil && !res.passed():
		w.logf("stopping: %s left for another worker to reclaim", r.UnitID)
		return ctx.Err()
	}
	if err := w.settle(ctx, r, res); err != nil {
		return err
	}
	return ctx.Err()
}

// attempt runs the Func, turning a panic into a failed result that is not
// retried (the worker's code, not the unit, broke).
func (w *worker) attempt(ctx context.Context, r queue.Reservation, out chan<- attempt) {
	defer func() {
		if p := recover(); p != nil {
			stack := strings.Split(strings.TrimSpace(string(debug.Stack())), "\n")
			msg := fmt.Sprint(p)
			out <- attempt{
				res: Result{Outcome: Failed, NoRequeue: true, Errors: []events.ErrorEntry{{
					ExampleID: r.UnitID, Description: "worker Func panicked", Class: "panic", Message: msg, Backtrace: stack,
				}}},
				panicked:  fmt.Errorf("panic running %s: %s", r.UnitID, msg),
				backtrace: stack,
			}
		}
	}()
	out <- attempt{res: w.fn(ctx, r)}
}
