package worker

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/hopper-queue/hopper/queue"
)

// beat is what the heartbeat does at one tick (docs/design.md#heartbeat).
type beat int

const (
	beatRenew   beat = iota // renew the hold
	beatAbandon             // record the unit abandoned and let the hold go
	beatWait                // the hold is let go: only wait for the abort
	beatAbort               // the unit overran: the worker aborts it (see work)
)

// nextBeat decides a tick from how long the attempt has run: renew, until
// maxUnit when the unit is abandoned once, until maxUnit+timeout when the
// worker aborts. renewing is false once the hold was let go (abandoned,
// stale, corrupt, or given up after Redis errors).
func nextBeat(elapsed, maxUnit, timeout time.Duration, renewing, abandoned bool) beat {
	switch {
	case elapsed >= maxUnit+timeout:
		return beatAbort
	case !renewing:
		return beatWait
	case elapsed >= maxUnit && !abandoned:
		return beatAbandon
	}
	return beatRenew
}

// heartbeat keeps a worker's hold on one reservation alive while its Func
// runs. Its fields past done are set before done is closed. The abort is not
// its to time: a call to Redis can hang for Timeout and more (its commit,
// then finding out whether the commit landed), and the unit must still be
// stopped at MaxUnitDuration+Timeout; work has its own timer for that.
type heartbeat struct {
	w     *worker
	r     queue.Reservation
	start time.Time

	stop chan struct{} // closed by finish: the Func returned or was aborted
	done chan struct{} // closed when the heartbeat has stopped
	gone chan struct{} // closed once corrupt is set: work stops the Func

	corrupt error // the build's state is missing
	lost    error // Redis failed for longer than the timeout: the last error
}

// startHeartbeat starts r's heartbeat; ctx must not end with the worker's
// stop (the hold outlives it until the Func returns).
func (w *worker) startHeartbeat(ctx context.Context, r queue.Reservation, start time.Time) *heartbeat {
	h := &heartbeat{w: w, r: r, start: start,
		stop: make(chan struct{}), done: make(chan struct{}), gone: make(chan struct{})}
	go h.run(ctx)
	return h
}

// finish stops the heartbeat and waits for it.
func (h *heartbeat) finish() {
	close(h.stop)
	<-h.done
}

func (h *heartbeat) run(ctx context.Context) {
	defer close(h.done)
	cfg := h.w.cfg
	interval := HeartbeatInterval(cfg.Timeout)
	retry := min(time.Second, interval)
	abortAt := cfg.MaxUnitDuration + cfg.Timeout
	renewing, abandoned := true, false
	lastOK, failures := h.start, 0
	wait := interval
	for {
		select {
		case <-h.stop:
			return
		case <-cfg.Clock.After(wait):
		}
		now := cfg.Clock.Now()
		elapsed := now.Sub(h.start)
		wait = interval
		act := nextBeat(elapsed, cfg.MaxUnitDuration, cfg.Timeout, renewing, abandoned)
		switch act {
		case beatAbort:
			return // nothing left to renew; work aborts the unit
		case beatWait:
			wait = min(interval, abortAt-elapsed)
			continue
		}

		cctx, cancel := context.WithTimeout(ctx, interval)
		var err error
		if act == beatAbandon {
			err = h.w.build.Abandon(cctx, h.r, float64(elapsed.Milliseconds()))
		} else {
			err = h.w.build.Heartbeat(cctx, h.r)
		}
		cancel()
		switch {
		case err == nil:
			if failures > 0 {
				h.w.logf("heartbeat recovered after %d failed attempt(s)", failures)
				failures = 0
			}
			lastOK = now
			if act == beatAbandon {
				abandoned, renewing = true, false
			}
		case errors.Is(err, queue.ErrStale):
			// Reclaimed by another worker: let the Func finish; its
			// settlement will be refused.
			renewing = false
		case errors.Is(err, queue.ErrCorrupt):
			// The build's state is gone for good: nothing the Func does
			// can be recorded, and nothing is left to renew.
			h.corrupt = err
			close(h.gone)
			return
		default:
			if failures == 0 {
				h.w.logf("heartbeat failed (%v); retrying for up to %ss", err, seconds(cfg.Timeout))
			}
			failures++
			if now.Sub(lastOK) >= cfg.Timeout {
				renewing = false
				h.lost = err
			} else {
				wait = retry
			}
		}
		if !renewing {
			wait = max(min(interval, abortAt-elapsed), 0)
		}
	}
}

// seconds prints a duration in seconds the way the command line takes it.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}
