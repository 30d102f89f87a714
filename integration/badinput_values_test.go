package integration

import (
	"context"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// badCall is one bad input at one boundary: the call, and what its error
// must say (the value, named).
type badCall struct {
	name string
	call func() error
	says string
}

// requireRefused runs each call on l's build and checks that it is refused
// with ErrInvalidArgument naming the value, and that no key of the build
// changed.
func requireRefused(t *testing.T, l *lifecycle, calls []badCall) {
	t.Helper()
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			badInputs.Add(1)
			l.requireUnchanged(func() {
				err := c.call()
				require.ErrorIs(t, err, queue.ErrInvalidArgument)
				assert.Contains(t, err.Error(), c.says)
			})
		})
	}
}

// NaN, infinite, negative and out-of-range budgets, durations and timeouts
// are refused before anything is sent, each naming the value. (Negative
// caps in a manifest: TestPublishValidation; worker.Config and
// report.Options without Redis: worker/config_test.go,
// report/options_test.go.)
func TestBadInputNumbers(t *testing.T) {
	defer logBadInputs(t)
	l := published(t, "u1", "u2")
	r := l.reservation("w1")
	r.UnitType = "file"
	failed := queue.Result{DurationMS: 1, FailureSummary: "1 failure"}
	requeue := func(caps queue.Budgets) func() error {
		return func() error { _, err := l.build.Requeue(l.ctx, r, failed, caps); return err }
	}
	finalize := func(ms float64) func() error {
		return func() error {
			return l.build.Finalize(l.ctx, r, queue.Result{Outcome: events.OutcomePassed, DurationMS: ms})
		}
	}
	join := func(caps queue.Budgets) func() error {
		return func() error {
			m := manifestOf("u1", "u2")
			m.Budgets = caps
			_, err := l.open().Join(l.ctx, "w9", m, fastJoin)
			return err
		}
	}
	open := func(o queue.Options) func() error {
		return func() error { _, err := queue.Open(l.client, l.id, o); return err }
	}
	calls := []badCall{
		{"requeue tolerance NaN", requeue(queue.Budgets{RequeueTolerance: math.NaN()}), "requeue tolerance NaN is not between 0 and 1"},
		{"requeue tolerance +Inf", requeue(queue.Budgets{RequeueTolerance: math.Inf(1)}), "requeue tolerance +Inf is not between 0 and 1"},
		{"requeue tolerance -Inf", requeue(queue.Budgets{RequeueTolerance: math.Inf(-1)}), "requeue tolerance -Inf is not between 0 and 1"},
		{"requeue tolerance just over 1", requeue(queue.Budgets{RequeueTolerance: math.Nextafter(1, 2)}), "requeue tolerance 1.0000000000000002 is not between 0 and 1"},
		{"requeue tolerance negative zero-ish", requeue(queue.Budgets{RequeueTolerance: -1e-300}), "requeue tolerance -1e-300"},
		{"requeue max requeues negative", requeue(queue.Budgets{MaxRequeues: -1}), "max requeues -1 is negative"},
		{"requeue max reclaims negative", requeue(queue.Budgets{MaxReclaims: math.MinInt}), "max reclaims -9223372036854775808 is negative"},
		{"join tolerance NaN", join(queue.Budgets{RequeueTolerance: math.NaN()}), "requeue tolerance NaN"},
		{"join tolerance +Inf", join(queue.Budgets{RequeueTolerance: math.Inf(1)}), "requeue tolerance +Inf"},
		{"finalize duration NaN", finalize(math.NaN()), "duration NaN ms"},
		{"finalize duration +Inf", finalize(math.Inf(1)), "duration +Inf ms"},
		{"finalize duration negative", finalize(-0.5), "duration -0.5 ms"},
		{"requeue duration NaN", func() error {
			_, err := l.build.Requeue(l.ctx, r, queue.Result{DurationMS: math.NaN()}, queue.Budgets{})
			return err
		}, "duration NaN ms"},
		{"finalize duration 1e21", finalize(1e21), "duration 1e+21 ms is not a non-negative number below 1e21"},
		{"requeue duration past 1e21", func() error {
			_, err := l.build.Requeue(l.ctx, r, queue.Result{DurationMS: math.MaxFloat64}, queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1})
			return err
		}, "duration 1.7976931348623157e+308 ms"},
		{"abandon elapsed 1e21", func() error { return l.build.Abandon(l.ctx, r, 1e21) }, "elapsed 1e+21 ms"},
		{"abandon elapsed NaN", func() error { return l.build.Abandon(l.ctx, r, math.NaN()) }, "elapsed NaN ms"},
		{"abandon elapsed -Inf", func() error { return l.build.Abandon(l.ctx, r, math.Inf(-1)) }, "elapsed -Inf ms"},
		{"reclaim timeout negative", func() error { _, err := l.build.Reclaim(l.ctx, "w2", -time.Nanosecond, 3); return err }, "reclaim timeout -1ns is negative"},
		{"reclaim max reclaims negative", func() error { _, err := l.build.Reclaim(l.ctx, "w2", time.Second, -1); return err }, "max reclaims -1 is negative"},
		{"reserve timeout sub-millisecond", func() error {
			_, _, err := l.build.Reserve(l.ctx, "w2", queue.ReserveOptions{Timeout: time.Microsecond})
			return err
		}, "reclaim timeout 1µs is below one millisecond"},
		{"join init timeout negative", func() error {
			_, err := l.open().Join(l.ctx, "w9", manifestOf("u1", "u2"), queue.JoinOptions{InitTimeout: -time.Second})
			return err
		}, "init timeout -1s is below one millisecond"},
		{"join poll interval sub-millisecond", func() error {
			_, err := l.open().Join(l.ctx, "w9", manifestOf("u1", "u2"), queue.JoinOptions{PollInterval: time.Nanosecond})
			return err
		}, "poll interval 1ns is below one millisecond"},
		{"lease TTL negative", func() error { _, _, err := l.build.TryLease(l.ctx, "w9", -time.Second); return err }, "lease TTL -1s is below one millisecond"},
		{"options TTL sub-millisecond", open(queue.Options{TTL: time.Microsecond}), "TTL 1µs is below one millisecond"},
		{"options TTL negative", open(queue.Options{TTL: -time.Hour}), "TTL -1h0m0s is below one millisecond"},
		{"options max attempts negative", open(queue.Options{MaxAttempts: -3}), "MaxAttempts -3 is below 1"},
		{"options backoff reversed", open(queue.Options{BackoffFloor: time.Second, BackoffCeil: time.Millisecond}), "backoff 1s..1ms is not a range"},
		{"options resolve wait negative", open(queue.Options{ResolveWait: -time.Second}), "ResolveWait -1s is negative"},
		{"options cluster wait negative", open(queue.Options{ClusterWait: -time.Second}), "ClusterWait -1s is negative"},
	}
	const ttl = "600000"
	s, e := string(r.Stream), r.EntryID
	transition := func(argv ...string) func() error {
		return func() error { _, err := queue.Transition(l.ctx, l.client, l.scriptKeys(), argv); return err }
	}
	for _, c := range []struct {
		name, says string
		argv       []string
	}{
		{"ttl_ms zero", `ttl_ms 0 is below 1`, []string{"liveness", "w1", "0"}},
		{"ttl_ms negative", `ttl_ms -5 is below 1`, []string{"liveness", "w1", "-5"}},
		{"ttl_ms fraction", `ttl_ms "1.5" is not an integer`, []string{"liveness", "w1", "1.5"}},
		{"ttl_ms NaN", `ttl_ms "NaN" is not an integer`, []string{"liveness", "w1", "NaN"}},
		{"ttl_ms past int64", `ttl_ms "9223372036854775808" is not an integer`, []string{"liveness", "w1", "9223372036854775808"}},
		{"timeout_ms negative", `timeout_ms -1 is below 0`, []string{"reclaim", "w1", ttl, "-1", "3"}},
		{"timeout_ms float", `timeout_ms "1e3" is not an integer`, []string{"reclaim", "w1", ttl, "1e3", "3"}},
		{"max_reclaims NaN", `max_reclaims "NaN" is not a non-negative number`, []string{"reclaim", "w1", ttl, "0", "NaN"}},
		{"max_reclaims Inf", `max_reclaims "Inf" is not a non-negative number`, []string{"reclaim", "w1", ttl, "0", "Inf"}},
		{"max_reclaims overflow", `max_reclaims "1e400" is not a non-negative number`, []string{"reclaim", "w1", ttl, "0", "1e400"}},
		{"max_reclaims negative", `max_reclaims "-1" is not a non-negative number`, []string{"reclaim", "w1", ttl, "0", "-1"}},
		{"delivery_count zero", `delivery_count 0 is below 1`, []string{"heartbeat", "w1", ttl, s, e, "0", r.UnitID}},
		{"delivery_count overflow", `delivery_count "99999999999999999999" is not an integer`, []string{"heartbeat", "w1", ttl, s, e, "99999999999999999999", r.UnitID}},
		{"duration_ms NaN", `duration_ms "NaN"`, []string{"finalize", "w1", ttl, s, e, "1", r.UnitID, "passed", "NaN"}},
		{"duration_ms -Inf", `duration_ms "-Inf"`, []string{"finalize", "w1", ttl, s, e, "1", r.UnitID, "passed", "-Inf"}},
		{"duration_ms 1e21", `duration_ms "1e21" is not below 1e21 milliseconds`, []string{"finalize", "w1", ttl, s, e, "1", r.UnitID, "passed", "1e21"}},
		{"requeue duration_ms past 1e21", `duration_ms "5e30"`, []string{"requeue", "w1", ttl, s, e, "1", r.UnitID, "file", "1", "1", "5e30"}},
		{"elapsed_ms 1e21", `elapsed_ms "1000000000000000000000"`, []string{"abandoned", "w1", ttl, s, e, "1", r.UnitID, "1000000000000000000000"}},
		{"elapsed_ms negative", `elapsed_ms "-1"`, []string{"abandoned", "w1", ttl, s, e, "1", r.UnitID, "-1"}},
		{"max_requeues past int32", `max_requeues 2147483648 is too large`, []string{"requeue", "w1", ttl, s, e, "1", r.UnitID, "file", "2147483648", "1", "1"}},
		{"max_requeues fraction", `max_requeues "1.5" is not an integer`, []string{"requeue", "w1", ttl, s, e, "1", r.UnitID, "file", "1.5", "1", "1"}},
		{"requeue_tolerance NaN", `requeue_tolerance "NaN"`, []string{"requeue", "w1", ttl, s, e, "1", r.UnitID, "file", "1", "NaN", "1"}},
		{"requeue_tolerance over 1", `requeue tolerance 1.01 is not between 0 and 1`, []string{"requeue", "w1", ttl, s, e, "1", r.UnitID, "file", "1", "1.01", "1"}},
		{"entry id", `entry id "1-x" is not <ms>-<seq>`, []string{"heartbeat", "w1", ttl, s, "1-x", "1", r.UnitID}},
		{"stream", `unknown stream "units:"`, []string{"heartbeat", "w1", ttl, "units:", e, "1", r.UnitID}},
	} {
		calls = append(calls, badCall{"Transition " + c.name, transition(c.argv...), c.says})
	}
	requireRefused(t, l, calls)
}

// A ttl_ms too large for a time.Duration (over 292 years) must be refused,
// naming it, like any other out-of-range number.
//
// What it guards: were parseCall (queue/transition.go) to check only
// ttl_ms >= 1, Transition would turn it into time.Duration(ttl_ms) *
// time.Millisecond, which overflows. 18446744073711 ms wraps to about
// 1.45 ms: accepted as a TTL of 1 ms, the transition renews the build's six
// keys with PEXPIRE 1 and the whole build (meta, units, unit states, the
// log) is gone a millisecond later. Other values wrap to negative TTLs and
// are refused, but with a message about another number ("TTL -1ms").
// parseCall refuses a ttl_ms above what a time.Duration holds, naming it.
func TestBadInputTransitionTTLOverflow(t *testing.T) {
	defer logBadInputs(t)
	for _, ttl := range []string{"18446744073711", "9223372036854775807"} {
		t.Run(ttl, func(t *testing.T) {
			badInputs.Add(1)
			l := published(t, "u1")
			before := slices.Sorted(maps.Keys(l.snapshot()))
			_, err := queue.Transition(l.ctx, l.client, l.scriptKeys(), []string{"liveness", "w1", ttl, ""})
			time.Sleep(10 * time.Millisecond) // a PEXPIRE of 1 ms has struck by now
			assert.Equal(t, before, slices.Sorted(maps.Keys(l.snapshot())), "the build's keys after the call")
			require.ErrorIs(t, err, queue.ErrInvalidArgument)
			assert.Contains(t, err.Error(), "ttl_ms "+ttl)
		})
	}
}

// A worker.Config whose MaxUnitDuration and Timeout add up past what a
// time.Duration holds is out of range: it must be refused
// (ErrInvalidConfig) rather than run.
//
// What it guards: the heartbeat computes its abort point as
// MaxUnitDuration + Timeout (worker/heartbeat.go); bounded from below only,
// that sum overflows to a negative duration, the first heartbeat tick
// aborts the unit and Run returns ErrAborted (exit 4) for a unit that ran a
// few seconds. Config.withDefaults (worker/config.go) refuses durations
// whose sum overflows.
func TestBadInputWorkerConfigDurationOverflow(t *testing.T) {
	defer logBadInputs(t)
	badInputs.Add(1)
	l := newLifecycle(t)
	cfg := worker.Config{
		BuildID: l.id, WorkerID: "w1", Timeout: 1 << 62, MaxUnitDuration: 1 << 62,
		Clock: newFastClock(1000), Block: 10 * time.Millisecond, Log: io.Discard, Output: io.Discard,
	}
	var ran atomic.Bool
	err := worker.Run(l.ctx, l.client, worker.Suite{Units: []string{"a"}}, cfg, func(ctx context.Context, r queue.Reservation) worker.Result {
		ran.Store(true)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		return worker.Result{Outcome: worker.Passed}
	})
	if !assert.ErrorIs(t, err, worker.ErrInvalidConfig, "got %.200v", err) {
		assert.False(t, ran.Load(), "a unit ran under a config that cannot be honoured")
	}
}

// Payloads that are not the JSON they should be are refused before
// anything is sent: an attempt's errors (finalize, requeue) must be valid
// JSON, a prebuilt event (worker_error, stale_rejected) a JSON object.
// (Through Transition's finalize and worker_error: TestFinalizeRefusesBadInput
// and TestPrebuiltEvents.)
func TestBadInputJSONPayloads(t *testing.T) {
	defer logBadInputs(t)
	l := published(t, "u1")
	r := l.reservation("w1")
	r.UnitType = "file"
	var calls []badCall
	for _, bad := range []string{`[{"unclosed"`, `{`, `nul`, `[1,]`, `{"a":1}{}`, `'single'`, "[\"tab\t\"]"} {
		calls = append(calls,
			badCall{"finalize errors " + bad, func() error {
				return l.build.Finalize(l.ctx, r, queue.Result{Outcome: events.OutcomeFailed, Reason: events.ReasonTestFailure, Errors: []byte(bad)})
			}, "errors payload is not valid JSON"},
			badCall{"requeue errors " + bad, func() error {
				_, err := l.build.Requeue(l.ctx, r, queue.Result{DurationMS: 1, Errors: []byte(bad)}, queue.Budgets{})
				return err
			}, "errors payload is not valid JSON"},
			badCall{"Transition requeue errors_json " + bad, func() error {
				_, err := queue.Transition(l.ctx, l.client, l.scriptKeys(), []string{"requeue", "w1", "600000", string(r.Stream), r.EntryID, "1", r.UnitID, "file", "1", "1", "1", "s", bad})
				return err
			}, "errors payload is not valid JSON"},
		)
	}
	for _, bad := range []string{`[1]`, `null`, `"x"`, `{`, ``, `{"a":1}{}`, `12`} {
		calls = append(calls,
			badCall{"AppendPrebuilt " + bad, func() error { return l.build.AppendPrebuilt(l.ctx, "w1", []byte(bad)) }, "prebuilt event"},
			badCall{"Transition stale_rejected " + bad, func() error {
				_, err := queue.Transition(l.ctx, l.client, l.scriptKeys(), []string{"stale_rejected", "w1", "600000", bad})
				return err
			}, "prebuilt event"},
		)
	}
	requireRefused(t, l, calls)
}

// Transition refuses an unknown mode, a wrong number of arguments for each
// mode, and KEYS that are not the script's six, naming what is wrong, with
// nothing written.
func TestBadInputTransitionArguments(t *testing.T) {
	defer logBadInputs(t)
	l := published(t, "u1")
	keys := l.scriptKeys()
	call := func(keys []string, argv ...string) func() error {
		return func() error { _, err := queue.Transition(l.ctx, l.client, keys, argv); return err }
	}
	calls := []badCall{
		{"no argv", call(keys), "argv is empty"},
		{"empty mode", call(keys, "", "w1", "1000"), "unknown transition mode "},
		{"upper-case mode", call(keys, "FINALIZE", "w1", "1000"), "unknown transition mode FINALIZE"},
		{"mode with a space", call(keys, "finalize ", "w1", "1000"), "unknown transition mode finalize "},
		{"mode with a NUL", call(keys, "liveness\x00", "w1", "1000"), "unknown transition mode liveness\x00"},
		{"init, the publisher's script", call(keys, "init", "w1", "1000"), "unknown transition mode init"},
		{"no keys", call(nil, "liveness", "w1", "1000"), "want 6 keys (units, units:priority, attempts, meta, unit_state, workers), got 0"},
		{"five keys", call(keys[:5], "liveness", "w1", "1000"), "got 5"},
		{"seven keys", call(append(append([]string(nil), keys...), "extra"), "liveness", "w1", "1000"), "got 7"},
		{"an empty key", call([]string{keys[0], keys[1], keys[2], "", keys[4], keys[5]}, "liveness", "w1", "1000"), "key 4 is empty"},
	}
	counts := map[string][2]int{
		"delivery_accounting": {6, 6}, "reclaim": {5, 5}, "heartbeat": {7, 7}, "finalize": {9, 11}, "requeue": {11, 13},
		"abandoned": {8, 8}, "liveness": {3, 4}, "worker_error": {4, 4}, "stale_rejected": {4, 4},
	}
	for mode, n := range counts {
		for _, got := range []int{1, n[0] - 1, n[1] + 1} {
			argv := append([]string{mode}, strings.Split(strings.Repeat("x,", got-1), ",")[:got-1]...)
			says := "mode " + mode + " takes "
			calls = append(calls, badCall{mode + " with " + strconv.Itoa(got) + " arguments", call(keys, argv...), says})
		}
	}
	requireRefused(t, l, calls)
}
