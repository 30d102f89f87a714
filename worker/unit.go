package worker

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// attempt is what the BatchFunc's goroutine hands back: one result per
// reservation, in order.
type attempt struct {
	res       []Result
	panicked  error
	backtrace []string
}

// work runs one batch of reservations (one, unless Config.Batch says
// more): the BatchFunc beside a heartbeat for each, then each one's
// settlement (docs/design.md#heartbeat, docs/design.md#finalize). Each
// unit keeps its own fence (docs/design.md#batches): a
// unit reclaimed while the batch runs is refused as stale when it settles,
// and the others still count.
func (w *worker) work(ctx context.Context, rs []queue.Reservation) error {
	start := w.cfg.Clock.Now()
	unitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan attempt, 1) // buffered: an aborted Func may return after Run did
	go w.attempt(unitCtx, rs, done)
	hbs, gone := w.startHeartbeats(context.WithoutCancel(ctx), rs, start)
	finish := func() {
		for _, hb := range hbs {
			hb.finish()
		}
	}
	// The abort has its own timer, not the heartbeat's ticks, which a
	// hanging call to Redis would hold back.
	overrun := w.cfg.Clock.After(w.cfg.MaxUnitDuration + w.cfg.Timeout)

	var a attempt
	select {
	case a = <-done:
		finish()
	case hb := <-gone:
		// Running on would only delay the exit that tells why.
		cancel()
		finish()
		return w.fail(ctx, events.PhaseRedis, hb.r.UnitID, hb.corrupt)
	case <-overrun:
		what := unitNames(rs)
		w.logf("Aborting worker: %s exceeded %ss", what, seconds(w.cfg.MaxUnitDuration))
		cancel()
		// The units are stopped now; the heartbeats end once a call in
		// flight returns, so that nothing Run started outlives it.
		finish()
		return stopErrorf(ErrAborted, w.cfg.WorkerID, "%s ran past %ss (max unit duration) + %ss (timeout)",
			what, seconds(w.cfg.MaxUnitDuration), seconds(w.cfg.Timeout))
	}
	if a.panicked != nil {
		w.recordError(ctx, events.PhaseExecution, rs[0].UnitID, a.panicked, a.backtrace)
	}
	for _, hb := range hbs {
		switch {
		case hb.corrupt != nil:
			return w.fail(ctx, events.PhaseRedis, hb.r.UnitID, hb.corrupt)
		case hb.lost != nil:
			return stopErrorf(ErrHeartbeatLost, w.cfg.WorkerID, "no renewal of %s succeeded for %ss (timeout): %v",
				hb.r.UnitID, seconds(w.cfg.Timeout), hb.lost)
		}
	}
	for i, r := range rs {
		res := a.res[i]
		if res.Duration <= 0 {
			res.Duration = w.cfg.Clock.Now().Sub(start)
		}
		if ctx.Err() != nil {
			// Stopping: no settlement reads ahead a reservation that
			// will not come (queue.ReserveOptions.ReadAhead).
			w.build.StopReadAhead(w.cfg.WorkerID)
			if !res.passed() {
				w.logf("stopping: %s left for another worker to reclaim", r.UnitID)
				continue
			}
		}
		if err := w.settle(ctx, r, res); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// startHeartbeats starts a heartbeat for each reservation. gone yields the
// first whose build state is found missing.
func (w *worker) startHeartbeats(ctx context.Context, rs []queue.Reservation, start time.Time) ([]*heartbeat, <-chan *heartbeat) {
	hbs := make([]*heartbeat, len(rs))
	gone := make(chan *heartbeat, len(rs))
	for i, r := range rs {
		hb := w.startHeartbeat(ctx, r, start)
		hbs[i] = hb
		go func() {
			select {
			case <-hb.gone:
				gone <- hb
			case <-hb.done:
			}
		}()
	}
	return hbs, gone
}

// attempt runs the BatchFunc, turning a panic into failed results that are
// not retried (the worker's code, not the units, broke), and a wrong count
// of results into failed results that say so.
func (w *worker) attempt(ctx context.Context, rs []queue.Reservation, out chan<- attempt) {
	defer func() {
		if p := recover(); p != nil {
			stack := strings.Split(strings.TrimSpace(string(debug.Stack())), "\n")
			msg := fmt.Sprint(p)
			a := attempt{panicked: fmt.Errorf("panic running %s: %s", unitNames(rs), msg), backtrace: stack}
			for _, r := range rs {
				a.res = append(a.res, Result{Outcome: Failed, NoRequeue: true, Errors: []events.ErrorEntry{{
					ExampleID: r.UnitID, Description: "worker Func panicked", Class: "panic", Message: msg, Backtrace: stack,
				}}})
			}
			out <- a
		}
	}()
	res := w.fn(ctx, rs)
	if len(res) != len(rs) {
		panic(fmt.Sprintf("BatchFunc returned %d results for %d units", len(res), len(rs)))
	}
	out <- attempt{res: res}
}

// unitNames names the units of a batch for the worker's lines.
func unitNames(rs []queue.Reservation) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.UnitID
	}
	return strings.Join(names, ", ")
}
