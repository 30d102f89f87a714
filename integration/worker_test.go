package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func units(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("./pkg/p%02d", i)
	}
	return out
}

func passWith(ctx context.Context, r queue.Reservation) worker.Result {
	return worker.Result{Outcome: worker.Passed, Output: []byte("ok " + r.UnitID + "\n")}
}

func failure(unit, msg string) []events.ErrorEntry {
	return []events.ErrorEntry{{ExampleID: unit + "/TestX", Description: "TestX", Class: "FAIL", Message: msg, Backtrace: []string{unit + "/x_test.go:12"}}}
}

func TestBuildAllPass(t *testing.T) {
	f := newFleet(t, units(12)...)
	errs := f.run(f.workers(4, nil), passWith)
	for i, err := range errs {
		require.NoError(t, err, "worker %d", i+1)
	}
	f.requireFinalizedOnce()
	assert.Equal(t, 1, strings.Count(f.log.String(), "initialized build "+f.id+" (12 units)"), f.log.String())
	assert.Equal(t, 3, strings.Count(f.log.String(), "joined build "+f.id+" (12 units)"), f.log.String())
	for _, u := range f.suite.Units {
		assert.Equal(t, 1, strings.Count(f.out.String(), "ok "+u+"\n"), "output of %s", u)
	}

	s, _ := f.requireReport(report.VerdictPassed, 0)
	assert.Empty(t, s["failed"])
	assert.Empty(t, s["flaky"])
	assert.Empty(t, s["worker_errors"])
	assert.Len(t, s["workers"], 4)
	assert.Equal(t, f.suite.Fingerprint().Sum, s["fingerprint"])
}

func TestBuildHardFailure(t *testing.T) {
	for name, tt := range map[string]struct {
		noRequeue  bool
		wantReason string
	}{
		"not requeueable":                   {true, events.ReasonTestFailure},
		"requeueable, no retries in budget": {false, events.ReasonRetryBudgetExhausted},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFleet(t, units(6)...)
			bad := f.suite.Units[3]
			var attempts atomic.Int32
			errs := f.run(f.workers(3, nil), func(ctx context.Context, r queue.Reservation) worker.Result {
				if r.UnitID != bad {
					return passWith(ctx, r)
				}
				attempts.Add(1)
				return worker.Result{Outcome: worker.Failed, NoRequeue: tt.noRequeue,
					Errors: failure(bad, "want 1, got 2"), Output: []byte("FAIL " + bad + "\n")}
			})
			for _, err := range errs {
				require.NoError(t, err, "workers exit 0 whatever the tests did")
			}
			f.requireFinalizedOnce()
			assert.EqualValues(t, 1, attempts.Load())
			assert.Equal(t, 1, strings.Count(f.out.String(), "FAIL "+bad+"\n"), "the failure is printed once")

			s, cases := f.requireReport(report.VerdictFailed, 1)
			failed := s["failed"].([]any)
			require.Len(t, failed, 1)
			fu := failed[0].(map[string]any)
			assert.Equal(t, bad, fu["unit_id"])
			assert.Equal(t, tt.wantReason, fu["reason"])
			assert.Regexp(t, `^ci-\d$`, fu["worker_id"])
			errsJSON := fu["errors"].([]any)
			require.Len(t, errsJSON, 1)
			assert.Equal(t, "want 1, got 2", errsJSON[0].(map[string]any)["message"])
			require.NotNil(t, cases[bad].Failure)
			assert.Contains(t, cases[bad].Failure.Message, "want 1, got 2")
		})
	}
}

func TestBuildFlakyUnitPassesOnRetry(t *testing.T) {
	f := newFleet(t, units(5)...)
	flaky := f.suite.Units[1]
	errs := f.run(f.workers(2, func(c *worker.Config) { c.MaxRequeues, c.RequeueTolerance = 1, 1 }),
		func(ctx context.Context, r queue.Reservation) worker.Result {
			if r.UnitID != flaky {
				return passWith(ctx, r)
			}
			if r.RetryIndex == 0 {
				return worker.Result{Outcome: worker.Failed, Errors: failure(flaky, "timing"), Output: []byte("attempt 1 failed\n")}
			}
			return worker.Result{Outcome: worker.Passed, Output: []byte("attempt 2 passed\n")}
		})
	for _, err := range errs {
		require.NoError(t, err)
	}
	f.requireFinalizedOnce()
	assert.Contains(t, f.log.String(), "Retrying "+flaky+" (retry 1 of 1; next attempt 2): 1 failure(s)")
	assert.Contains(t, f.out.String(), "attempt 2 passed")
	assert.NotContains(t, f.out.String(), "attempt 1 failed", "a retried attempt's output is discarded")
	requeued := f.eventsOf(events.TypeRequeued)
	require.Len(t, requeued, 1)
	assert.Equal(t, flaky, requeued[0]["unit_id"])

	s, cases := f.requireReport(report.VerdictPassed, 0)
	assert.Empty(t, s["failed"])
	assert.Equal(t, []any{flaky}, s["flaky"])
	assert.Equal(t, map[string]any{flaky: float64(1)}, s["retry_counts"])
	assert.Contains(t, cases[flaky].SystemOut, "flaky: passed after 1 retries")
}

// Only ceil(10 units x 0.1) = 1 unit may enter retry: of two units that
// would pass on a retry, one does and the other's failure is final.
func TestBuildRetryToleranceExhausted(t *testing.T) {
	f := newFleet(t, units(10)...)
	shaky := map[string]bool{f.suite.Units[2]: true, f.suite.Units[7]: true}
	errs := f.run(f.workers(2, func(c *worker.Config) { c.MaxRequeues, c.RequeueTolerance = 3, 0.1 }),
		func(ctx context.Context, r queue.Reservation) worker.Result {
			if shaky[r.UnitID] && r.RetryIndex == 0 {
				return worker.Result{Outcome: worker.Failed, Errors: failure(r.UnitID, "flake")}
			}
			return passWith(ctx, r)
		})
	for _, err := range errs {
		require.NoError(t, err)
	}
	f.requireFinalizedOnce()

	s, cases := f.requireReport(report.VerdictFailed, 1)
	failed := s["failed"].([]any)
	flakyList := s["flaky"].([]any)
	require.Len(t, failed, 1)
	require.Len(t, flakyList, 1)
	lost := failed[0].(map[string]any)
	assert.True(t, shaky[lost["unit_id"].(string)])
	assert.True(t, shaky[flakyList[0].(string)])
	assert.NotEqual(t, lost["unit_id"], flakyList[0])
	assert.Equal(t, events.ReasonRetryBudgetExhausted, lost["reason"])
	assert.Equal(t, "1", f.hash(f.keys.Meta)["requeued_units_count"])
	if c := cases[lost["unit_id"].(string)]; assert.NotNil(t, c.Failure) {
		assert.Contains(t, c.Failure.Message, "flake")
	}
	assert.Contains(t, cases[flakyList[0].(string)].SystemOut, "flaky: passed after 1 retries")
}

// A unit that runs past MaxUnitDuration is recorded abandoned and its hold
// let go; another worker reclaims and finishes it; past MaxUnitDuration +
// Timeout the first worker aborts.
func TestBuildUnitExceedsMaxUnitDuration(t *testing.T) {
	f := newFleet(t, "slow", "u2", "u3")
	cfgs := f.workers(2, func(c *worker.Config) { c.Timeout, c.MaxUnitDuration = 600*time.Millisecond, 300*time.Millisecond })
	var stuck atomic.Int32
	errs := f.run(cfgs, func(ctx context.Context, r queue.Reservation) worker.Result {
		if r.UnitID == "slow" && r.ReclaimCount == 0 {
			stuck.Add(1)
			<-ctx.Done() // hangs until the worker aborts it
			return worker.Result{Outcome: worker.Failed, Output: []byte("never printed\n")}
		}
		return passWith(ctx, r)
	})
	aborted := 0
	for _, err := range errs {
		if err != nil {
			require.ErrorIs(t, err, worker.ErrAborted)
			assert.Equal(t, 4, worker.ExitCode(err))
			aborted++
		}
	}
	assert.Equal(t, 1, aborted, "errors: %v", errs)
	assert.EqualValues(t, 1, stuck.Load())
	f.requireFinalizedOnce()
	assert.Contains(t, f.log.String(), "Aborting worker: slow exceeded 0.3s")
	assert.NotContains(t, f.out.String(), "never printed")

	abandoned := f.eventsOf(events.TypeAbandoned)
	require.Len(t, abandoned, 1)
	assert.GreaterOrEqual(t, abandoned[0]["elapsed_ms"], float64(300))
	reclaimed := f.eventsOf(events.TypeReclaimed)
	require.Len(t, reclaimed, 1)
	assert.Equal(t, "slow", reclaimed[0]["unit_id"])
	assert.Equal(t, abandoned[0]["worker_id"], reclaimed[0]["previous_worker_id"])
	assert.NotEqual(t, abandoned[0]["worker_id"], reclaimed[0]["worker_id"])

	s, cases := f.requireReport(report.VerdictPassed, 0)
	assert.Empty(t, s["failed"])
	assert.Equal(t, []any{"slow"}, s["abandoned"])
	assert.Equal(t, map[string]any{"slow": float64(1)}, s["reclaim_counts"])
	assert.Empty(t, s["flaky"], "a reclaim never makes a unit flaky")
	assert.Contains(t, cases["slow"].SystemOut, "abandoned: an attempt exceeded --max-unit-duration")
	assert.Contains(t, cases["slow"].SystemOut, "reclaimed 1 time(s)")
}

// A worker stopped mid-unit leaves the unit pending; another worker reclaims
// it after Timeout and finalizes it, once.
func TestBuildWorkerStopsMidUnit(t *testing.T) {
	f := newFleet(t, "held", "u2", "u3", "u4")
	ctxA, stopA := context.WithCancel(f.ctx)
	defer stopA()
	started := make(chan string, 1)
	cfgA := f.config("ci-a")
	cfgA.Timeout = 600 * time.Millisecond
	doneA := f.start(ctxA, cfgA, func(ctx context.Context, r queue.Reservation) worker.Result {
		started <- r.UnitID
		<-ctx.Done()
		return worker.Result{Outcome: worker.Failed, Output: []byte("interrupted\n")}
	})
	held := <-started
	require.Equal(t, "held", held)
	stopA()
	require.ErrorIs(t, <-doneA, context.Canceled)
	assert.Contains(t, f.log.String(), "stopping: held left for another worker to reclaim")
	// Nothing was settled: the unit is still pending under ci-a.
	rows := f.pending(f.keys.Units)
	require.Len(t, rows, 1)
	assert.Equal(t, "ci-a", rows[0].Consumer)

	cfgB := f.config("ci-b")
	cfgB.Timeout = 600 * time.Millisecond
	errs := f.run([]worker.Config{cfgB}, passWith)
	require.NoError(t, errs[0])
	f.requireFinalizedOnce()
	assert.NotContains(t, f.out.String(), "interrupted")
	fin := f.eventsOf(events.TypeFinalized)
	for _, ev := range fin {
		assert.Equal(t, "ci-b", ev["worker_id"])
	}

	s, cases := f.requireReport(report.VerdictPassed, 0)
	assert.Equal(t, map[string]any{"held": float64(1)}, s["reclaim_counts"])
	assert.Empty(t, s["failed"])
	assert.Empty(t, s["abandoned"], "a stopped worker abandons nothing")
	assert.Contains(t, cases["held"].SystemOut, "reclaimed 1 time(s)")
}

// A result whose reservation was reclaimed while it ran is discarded and
// recorded as stale_rejected.
func TestBuildStaleResultDiscarded(t *testing.T) {
	f := newFleet(t, "u1")
	running, release := make(chan queue.Reservation, 1), make(chan struct{})
	done := f.start(f.ctx, f.config("ci-1"), func(ctx context.Context, r queue.Reservation) worker.Result {
		running <- r
		<-release
		return worker.Result{Outcome: worker.Passed, Output: []byte("stale output\n")}
	})
	r := <-running
	// Another worker takes the unit over (as after a long silence).
	taken, err := f.open().Reclaim(f.ctx, "thief", 0, 3)
	require.NoError(t, err)
	require.Equal(t, queue.ReclaimTaken, taken.Status)
	close(release)

	// The first worker's finalize is refused; the thief then finishes the
	// build and the first worker sees it complete.
	require.Eventually(t, func() bool { return strings.Contains(f.log.String(), "reservation for u1 is stale; result discarded") },
		10*time.Second, 10*time.Millisecond)
	require.NoError(t, f.open().Finalize(f.ctx, taken.Reservation, queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}))
	require.NoError(t, <-done)
	f.requireFinalizedOnce()
	assert.NotContains(t, f.out.String(), "stale output")
	stale := f.eventsOf(events.TypeStaleRejected)
	require.Len(t, stale, 1)
	assert.Equal(t, map[string]any{
		"type": "stale_rejected", "unit_id": "u1", "worker_id": "ci-1",
		"retry_index": float64(0), "reclaim_count": float64(0), "ownership_generation": float64(1),
		"operation": "finalize", "stream": "units", "entry_id": r.EntryID, "delivery_count": float64(1),
		"at_ms": stale[0]["at_ms"],
	}, stale[0])
	s, _ := f.requireReport(report.VerdictPassed, 0)
	assert.EqualValues(t, 1, s["stale_rejections"])
}

// A panicking Func fails its unit for good and is recorded (phase
// execution); the worker goes on.
func TestBuildFuncPanics(t *testing.T) {
	f := newFleet(t, "boom", "u2")
	errs := f.run(f.workers(1, func(c *worker.Config) { c.MaxRequeues, c.RequeueTolerance = 3, 1 }),
		func(ctx context.Context, r queue.Reservation) worker.Result {
			if r.UnitID == "boom" {
				panic("nil map")
			}
			return passWith(ctx, r)
		})
	require.NoError(t, errs[0])
	f.requireFinalizedOnce()
	werrs := f.eventsOf(events.TypeWorkerError)
	require.Len(t, werrs, 1)
	assert.Equal(t, "execution", werrs[0]["phase"])
	assert.Equal(t, "boom", werrs[0]["unit_id"])
	assert.Contains(t, werrs[0]["message"], "nil map")
	assert.NotEmpty(t, werrs[0]["backtrace"])

	s, _ := f.requireReport(report.VerdictFailed, 1)
	failed := s["failed"].([]any)
	require.Len(t, failed, 1)
	assert.Equal(t, "boom", failed[0].(map[string]any)["unit_id"])
	assert.Equal(t, events.ReasonTestFailure, failed[0].(map[string]any)["reason"])
}

// requireReport reads the build's report, as the report command would once
// the workers are done, and checks what every finished build must show: the
// verdict and exit code, in the report and in its JSON summary; the
// summary's totals, every unit finalized; and a JUnit file with one case
// per unit, no <error>, and a <failure> naming its reason for exactly the
// units the summary lists as failed. It returns the summary and the JUnit
// cases, by unit, for the scenario's own checks.
func (f *fleet) requireReport(verdict report.Verdict, exitCode int) (map[string]any, map[string]junitCase) {
	f.t.Helper()
	r := f.report()
	require.Equal(f.t, verdict, r.Verdict, r.Headline)
	assert.Equal(f.t, exitCode, r.ExitCode, "report exit code")
	n := len(f.suite.Units)
	s := f.summary(r)
	assert.Equal(f.t, string(verdict), s["verdict"], "summary verdict")
	assert.EqualValues(f.t, exitCode, s["exit_code"], "summary exit_code")
	assert.EqualValues(f.t, n, s["total_units"])
	assert.EqualValues(f.t, n, s["finalized_count"])
	assert.Equal(f.t, f.suite.UnitType, s["unit_type"])
	assert.Empty(f.t, s["never_finalized"])
	reasons := map[string]string{}
	for _, u := range s["failed"].([]any) {
		fu := u.(map[string]any)
		reason, _ := fu["reason"].(string)
		reasons[fu["unit_id"].(string)] = reason
	}
	cases := f.junit(r)
	assert.Len(f.t, cases, n, "JUnit cases: one per unit, no other")
	for _, u := range f.suite.Units {
		c, ok := cases[u]
		if !assert.True(f.t, ok, "no JUnit case for %s", u) {
			continue
		}
		assert.Nil(f.t, c.Error, "JUnit <error> for %s", u)
		reason, failed := reasons[u]
		if !failed {
			assert.Nil(f.t, c.Failure, "JUnit <failure> for %s, which passed", u)
		} else if assert.NotNil(f.t, c.Failure, "no JUnit <failure> for %s, which failed", u) {
			assert.NotEmpty(f.t, reason, "reason of %s", u)
			assert.Contains(f.t, c.Failure.Message, reason)
		}
	}
	return s, cases
}

// The build's state going missing under a worker is corruption: recorded
// (phase redis), exit 2, never re-created.
func TestBuildCorruptedUnderTheWorker(t *testing.T) {
	f := newFleet(t, "u1", "u2")
	errs := f.run(f.workers(1, nil), func(ctx context.Context, r queue.Reservation) worker.Result {
		require.NoError(t, f.do("DEL", f.keys.Meta).Error())
		return passWith(ctx, r)
	})
	require.ErrorIs(t, errs[0], queue.ErrCorrupt)
	assert.Equal(t, 2, worker.ExitCode(errs[0]))
	assert.False(t, f.exists(f.keys.Meta), "meta re-created")
	werrs := f.eventsOf(events.TypeWorkerError)
	require.Len(t, werrs, 1)
	assert.Equal(t, "redis", werrs[0]["phase"])
	assert.Equal(t, "queue.ErrCorrupt", werrs[0]["class"])
	assert.Equal(t, "u1", werrs[0]["unit_id"])
}

// The heartbeat rides out a Redis stall shorter than Timeout, saying so once
// and again when it recovers.
func TestBuildHeartbeatRidesOutARedisStall(t *testing.T) {
	f := newFleet(t, "u1")
	cfg := f.config("ci-1")
	cfg.Timeout = 3 * time.Second // heartbeat every 1 s
	resume := make(chan struct{})
	var once sync.Once
	done := f.start(f.ctx, cfg, func(ctx context.Context, r queue.Reservation) worker.Result {
		once.Do(func() {
			// Past the first tick (1 s) and its call's own timeout (1 s).
			require.NoError(t, srv.Pause(f.ctx))
			time.Sleep(2500 * time.Millisecond)
			require.NoError(t, srv.Unpause(f.ctx))
			close(resume)
		})
		<-resume
		time.Sleep(2 * time.Second) // a heartbeat after the stall
		return passWith(ctx, r)
	})
	t.Cleanup(func() { _ = srv.Unpause(context.Background()) })
	require.NoError(t, <-done)
	f.requireFinalizedOnce()
	log := f.log.String()
	t.Logf("worker log:\n%s", log)
	assert.Equal(t, 1, strings.Count(log, "heartbeat failed ("), log)
	assert.Contains(t, log, "); retrying for up to 3s")
	assert.Regexp(t, `heartbeat recovered after \d+ failed attempt\(s\)`, log)
}

// With an injected clock a unit can "run" for the default 900 s in a
// second: abandoned at 900 s, aborted at 900 + 180 s.
func TestBuildDefaultDurationsOnAFastClock(t *testing.T) {
	f := newFleet(t, "hang")
	cfg := f.config("ci-1")
	cfg.Timeout, cfg.MaxUnitDuration = 0, 0 // the defaults: 180 s and 900 s
	cfg.Clock = newFastClock(1000)
	errs := f.run([]worker.Config{cfg}, func(ctx context.Context, r queue.Reservation) worker.Result {
		<-ctx.Done()
		return worker.Result{Outcome: worker.Failed}
	})
	require.ErrorIs(t, errs[0], worker.ErrAborted)
	assert.Contains(t, f.log.String(), "Aborting worker: hang exceeded 900s")
	abandoned := f.eventsOf(events.TypeAbandoned)
	require.Len(t, abandoned, 1)
	assert.GreaterOrEqual(t, abandoned[0]["elapsed_ms"], float64(900000))
	assert.Less(t, abandoned[0]["elapsed_ms"], float64(1080000))
	assert.Empty(t, f.eventsOf(events.TypeFinalized))
}

// fastClock runs speed times faster than real time.
type fastClock struct {
	start time.Time
	speed time.Duration
}

func newFastClock(speed int) *fastClock {
	return &fastClock{start: time.Now(), speed: time.Duration(speed)}
}

func (c *fastClock) Now() time.Time { return c.start.Add(time.Since(c.start) * c.speed) }

func (c *fastClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	time.AfterFunc(d/c.speed, func() { ch <- c.Now() })
	return ch
}

// A heartbeat that finds the build's state gone stops the unit at once: its
// result can no longer be recorded, so a unit that would run on (here, one
// that hangs) is not left to its abort, which would hide the cause behind
// exit 4. The worker records the corruption (phase redis) and exits 2.
func TestHeartbeatFindsTheBuildGone(t *testing.T) {
	f := newFleet(t, "u1")
	cfg := f.config("ci-1")
	cfg.Timeout = 600 * time.Millisecond // a heartbeat every 200 ms
	cfg.MaxUnitDuration = time.Minute
	stopped := make(chan error, 1)
	done := f.start(f.ctx, cfg, func(ctx context.Context, r queue.Reservation) worker.Result {
		require.NoError(t, f.do("DEL", f.keys.Meta).Error())
		<-ctx.Done() // hangs until the worker stops it
		stopped <- ctx.Err()
		return worker.Result{Outcome: worker.Failed}
	})
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker ran on for 30 s after its heartbeat found the build gone")
	}
	require.ErrorIs(t, err, queue.ErrCorrupt)
	assert.Equal(t, 2, worker.ExitCode(err))
	select {
	case cause := <-stopped:
		assert.ErrorIs(t, cause, context.Canceled, "the unit's context")
	case <-time.After(10 * time.Second):
		t.Fatal("the unit was not stopped")
	}
	assert.False(t, f.exists(f.keys.Meta), "meta re-created")
	werrs := f.eventsOf(events.TypeWorkerError)
	require.Len(t, werrs, 1)
	assert.Equal(t, "redis", werrs[0]["phase"])
	assert.Equal(t, "u1", werrs[0]["unit_id"])
}
