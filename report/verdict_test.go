package report_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
)

// complete is a ready build of the given units whose log is evs and whose
// finalized_count is n.
func complete(units []string, n int64, evs []events.Event) report.Observation {
	return report.Observation{
		BuildID:  "b1",
		Presence: report.PresenceMeta,
		Meta: report.Meta{
			State: report.StateReady, TotalUnits: int64(len(units)), FinalizedCount: n,
			UnitType: "package", UnitIDs: units,
		},
		Manifest:       units,
		FinalizedCount: &n,
		Events:         evs,
	}
}

func with(o report.Observation, set func(*report.Observation)) report.Observation {
	set(&o)
	return o
}

func TestJudgeRules(t *testing.T) {
	allPassed := newLog(t).delivered("a", "w1").passed("a", "w1", 1).delivered("b", "w2").passed("b", "w2", 1).events()
	oneFailed := newLog(t).delivered("a", "w1").passed("a", "w1", 1).delivered("b", "w2").
		failed("b", "w2", 1, boom("AssertionError", "want 1\ngot 2")).events()
	units := []string{"a", "b"}

	tests := []struct {
		name     string
		obs      report.Observation
		opts     report.Options
		want     report.Verdict
		exit     int
		headline string
		details  []string
	}{
		{
			name: "redis unreachable",
			obs:  report.Observation{BuildID: "b1", Err: fmt.Errorf("%w: HGETALL meta: dial tcp: refused", report.ErrUnreachable)},
			want: report.VerdictUnreachable, exit: report.ExitInfrastructure,
			headline: "redis unreachable: HGETALL meta: dial tcp: refused",
		},
		{
			name: "corrupt log",
			obs:  with(complete(units, 2, allPassed), func(o *report.Observation) { o.Err = fmt.Errorf("%w: attempts entry 1-0", report.ErrCorrupt) }),
			want: report.VerdictCorrupt, exit: report.ExitInfrastructure,
			headline: "build b1 state unreadable: attempts entry 1-0",
		},
		{
			name: "missing",
			obs:  report.Observation{BuildID: "b1", Presence: report.PresenceNone},
			opts: report.Options{InitTimeout: 30 * time.Second},
			want: report.VerdictMissing, exit: report.ExitInfrastructure,
			headline: "build b1 never initialized (no manifest or tombstone after 30s)",
		},
		{
			name: "expired",
			obs:  report.Observation{BuildID: "b1", Presence: report.PresenceTombstone},
			want: report.VerdictExpired, exit: report.ExitIncomplete,
			headline: "build b1 was previously initialized; its state is gone (expired or evicted)",
		},
		{
			name: "init failed",
			obs: report.Observation{BuildID: "b1", Presence: report.PresenceMeta, Meta: report.Meta{
				State: report.StateInitFailed, LoadErrors: []string{"x.go: syntax error", "y.go: no such file"},
			}},
			want: report.VerdictInitFailed, exit: report.ExitIncomplete,
			headline: "build b1 failed to initialize: 2 load error(s)",
			details:  []string{"x.go: syntax error", "y.go: no such file"},
		},
		{
			name: "incomplete after the timeout",
			obs: with(complete(units, 1, newLog(t).delivered("a", "w1").passed("a", "w1", 1).delivered("b", "w2").events()),
				func(o *report.Observation) { o.Stall = &report.Stall{Cause: report.StallTimeout} }),
			opts: report.Options{Timeout: 90 * time.Second},
			want: report.VerdictIncomplete, exit: report.ExitIncomplete,
			headline: "incomplete: 1 of 2 units finalized after 90s (--wait)",
			details:  []string{"never finalized: b (last worker w2)"},
		},
		{
			name: "incomplete, workers inactive",
			obs: with(complete(units, 0, nil), func(o *report.Observation) {
				o.Stall = &report.Stall{Cause: report.StallInactive, Idle: 301400 * time.Millisecond}
			}),
			want: report.VerdictIncomplete, exit: report.ExitIncomplete,
			headline: "incomplete: workers inactive for 301s (--inactive-timeout 300s); 0 of 2 units finalized",
			details:  []string{"never finalized: a (never delivered)", "never finalized: b (never delivered)"},
		},
		{
			name: "zero examples",
			obs: with(complete(nil, 0, nil), func(o *report.Observation) {
				o.Meta.FileArgs = []string{"./pkg/..."}
			}),
			want: report.VerdictFailed, exit: report.ExitTestFailure,
			headline: "0 units, 0 examples selected (--allow-empty not given)",
			details:  []string{"./pkg/..."},
		},
		{
			name: "zero examples allowed",
			obs:  complete(nil, 0, nil),
			opts: report.Options{AllowEmpty: true},
			want: report.VerdictPassed, exit: report.ExitOK, headline: "passed",
		},
		{
			name: "total_examples from meta counts over units",
			obs: with(complete(units, 2, allPassed), func(o *report.Observation) {
				o.Meta.TotalExamples, o.Meta.HasTotalExamples = 0, true
			}),
			want: report.VerdictFailed, exit: report.ExitTestFailure,
			headline: "2 units, 0 examples selected (--allow-empty not given)",
		},
		{
			name: "fewer than min examples (units count when meta has no total_examples)",
			obs:  complete(units, 2, allPassed),
			opts: report.Options{MinExamples: 3},
			want: report.VerdictFailed, exit: report.ExitTestFailure,
			headline: "2 examples selected, fewer than --min-examples 3",
		},
		{
			name: "min examples met",
			obs:  complete(units, 2, allPassed),
			opts: report.Options{MinExamples: 2},
			want: report.VerdictPassed, exit: report.ExitOK, headline: "passed",
		},
		{
			name: "a failed unit",
			obs:  complete(units, 2, oneFailed),
			want: report.VerdictFailed, exit: report.ExitTestFailure,
			headline: "1 of 2 units failed",
			details:  []string{"failed: b (test_failure, worker w2) AssertionError: want 1"},
		},
		{
			name: "the empty rule comes before failed units",
			obs: with(complete(units, 2, oneFailed), func(o *report.Observation) {
				o.Meta.TotalExamples, o.Meta.HasTotalExamples = 0, true
			}),
			want: report.VerdictFailed, exit: report.ExitTestFailure,
			headline: "2 units, 0 examples selected (--allow-empty not given)",
		},
		{
			name: "complete by count, but a unit has no finalized event: never green",
			obs: complete(units, 2, newLog(t).delivered("a", "w1").passed("a", "w1", 1).passed("a", "w1", 1).
				delivered("b", "w2").events()),
			want: report.VerdictIncomplete, exit: report.ExitIncomplete,
			headline: "incomplete: 2 of 2 units finalized, but 1 unit(s) have no finalized event",
			details:  []string{"never finalized: b (last worker w2)", "invariant violated: a finalized 2 times"},
		},
		{
			name: "a unit finalized twice is reported",
			obs: complete([]string{"a"}, 2, newLog(t).delivered("a", "w1").passed("a", "w1", 1).
				reclaimed("a", "w2", "w1").passed("a", "w2", 1).events()),
			want: report.VerdictPassed, exit: report.ExitOK, headline: "passed",
			details: []string{"invariant violated: a finalized 2 times"},
		},
		{
			name: "passed",
			obs:  complete(units, 2, allPassed),
			want: report.VerdictPassed, exit: report.ExitOK, headline: "passed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := report.Judge(tc.obs, tc.opts)
			require.Equalf(t, tc.want, r.Verdict, "got verdict %s, want %s (%s)", r.Verdict, tc.want, r.Headline)
			require.Equalf(t, tc.exit, r.ExitCode, "got exit code %d, want %d", r.ExitCode, tc.exit)
			require.Equalf(t, tc.headline, r.Headline, "got headline %q, want %q", r.Headline, tc.headline)
			require.Equalf(t, tc.details, r.Details, "got details %q, want %q", r.Details, tc.details)
		})
	}
}

func TestVerdictExitCodes(t *testing.T) {
	want := map[report.Verdict]int{
		report.VerdictPassed: 0, report.VerdictFailed: 1,
		report.VerdictMissing: 2, report.VerdictUnreachable: 2, report.VerdictCorrupt: 2,
		report.VerdictIncomplete: 3, report.VerdictExpired: 3, report.VerdictInitFailed: 3,
	}
	for v, code := range want {
		require.Equalf(t, code, v.ExitCode(), "%s: got exit code %d, want %d", v, v.ExitCode(), code)
	}
}

func TestJudgeKeepsTheReadingError(t *testing.T) {
	cause := fmt.Errorf("%w: XRANGE: i/o timeout", report.ErrUnreachable)
	r := report.Judge(report.Observation{BuildID: "b", Err: cause}, report.Options{})
	require.Truef(t, errors.Is(r.Err, report.ErrUnreachable), "got Err %v, want it to wrap ErrUnreachable", r.Err)
}

// A finalized event whose outcome is neither passed nor failed (no outcome,
// a writer's typo, another tool's word) cannot be judged: read as "not
// failed" it would turn the build green. The events package decodes it
// (newer writers must not break older readers); the report refuses it.
func TestJudgeRefusesAnOutcomeItCannotRead(t *testing.T) {
	for _, outcome := range []string{``, `,"outcome":"error"`, `,"outcome":"Passed"`, `,"outcome":null`} {
		t.Run(outcome, func(t *testing.T) {
			log := newLog(t).delivered("a", "w1").
				raw(`{"type":"finalized","unit_id":"a","worker_id":"w1","retry_index":0,"reclaim_count":0,"ownership_generation":1,"at_ms":1` + outcome + `,"duration_ms":5,"reason":null,"errors":null,"stream":"units","entry_id":"1-0"}`).
				events()
			r := report.Judge(complete([]string{"a"}, 1, log), report.Options{})
			require.Equalf(t, report.VerdictCorrupt, r.Verdict, "got verdict %s (%s), want %s", r.Verdict, r.Headline, report.VerdictCorrupt)
			require.Equal(t, report.ExitInfrastructure, r.ExitCode)
			require.Truef(t, errors.Is(r.Err, report.ErrCorrupt), "got Err %v, want it to wrap ErrCorrupt", r.Err)
			require.Containsf(t, r.Headline, `unit a`, "got headline %q, want it to name the unit", r.Headline)
		})
	}
}
