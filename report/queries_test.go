package report_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
)

func TestUnitsInOrderOfFirstAppearance(t *testing.T) {
	log := newLog(t).
		workerError("w1", events.PhaseBoot, "E", "no unit").
		delivered("b", "w1").
		raw(`{"type":"paused","unit_id":"z"}`). // unknown type: ignored
		raw(`{"type":"worker_error","worker_id":"w2","phase":"execution","unit_id":"y","class":"E","message":"m","backtrace":[],"at_ms":1}`).
		delivered("a", "w2").
		passed("b", "w1", 1).
		stale("c", "w3", events.OperationFinalize).
		events()
	got := report.NewLog(log).Units()
	require.Equalf(t, []string{"b", "a", "c"}, got, "got %v, want [b a c]", got)
}

func TestFailed(t *testing.T) {
	tests := []struct {
		name string
		log  func(*logBuilder)
		want []report.FailedUnit
	}{
		{
			name: "passed only",
			log:  func(b *logBuilder) { b.delivered("a", "w1").passed("a", "w1", 5) },
			want: []report.FailedUnit{},
		},
		{
			name: "test failure keeps reason, worker and errors",
			log: func(b *logBuilder) {
				b.delivered("a", "w1").failed("a", "w1", 5, boom("E", "m"))
			},
			want: []report.FailedUnit{{
				UnitID: "a", Reason: ptr(events.ReasonTestFailure), WorkerID: "w1",
				Errors: events.EncodeErrors([]events.ErrorEntry{boom("E", "m")}),
			}},
		},
		{
			name: "null errors read as []",
			log:  func(b *logBuilder) { b.delivered("a", "w1").failed("a", "w1", 5) },
			want: []report.FailedUnit{{UnitID: "a", Reason: ptr(events.ReasonTestFailure), WorkerID: "w1", Errors: json.RawMessage(`[]`)}},
		},
		{
			name: "reclaim budget exhausted",
			log: func(b *logBuilder) {
				b.delivered("a", "w1").reclaimed("a", "w2", "w1").reclaimExhausted("a", "w3", "w2")
			},
			want: []report.FailedUnit{{UnitID: "a", Reason: ptr(events.ReasonReclaimBudgetExhausted), WorkerID: "w3", Errors: json.RawMessage(`[]`)}},
		},
		{
			name: "the last finalized counts: failed then passed is not failed",
			log: func(b *logBuilder) {
				b.delivered("a", "w1").failed("a", "w1", 5).passed("a", "w2", 5)
			},
			want: []report.FailedUnit{},
		},
		{
			name: "the last finalized counts: passed then failed is failed",
			log: func(b *logBuilder) {
				b.delivered("a", "w1").passed("a", "w1", 5).failed("a", "w2", 5)
			},
			want: []report.FailedUnit{{UnitID: "a", Reason: ptr(events.ReasonTestFailure), WorkerID: "w2", Errors: json.RawMessage(`[]`)}},
		},
		{
			name: "in first-appearance order",
			log: func(b *logBuilder) {
				b.delivered("b", "w1").delivered("a", "w2").failed("a", "w2", 1).failed("b", "w1", 1)
			},
			want: []report.FailedUnit{
				{UnitID: "b", Reason: ptr(events.ReasonTestFailure), WorkerID: "w1", Errors: json.RawMessage(`[]`)},
				{UnitID: "a", Reason: ptr(events.ReasonTestFailure), WorkerID: "w2", Errors: json.RawMessage(`[]`)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newLog(t)
			tc.log(b)
			got := report.NewLog(b.events()).Failed()
			require.Equalf(t, tc.want, got, "got %+v, want %+v", got, tc.want)
		})
	}
}

func TestFailedUnitFirstError(t *testing.T) {
	tests := []struct {
		name   string
		errors string
		want   events.ErrorEntry
		wantOK bool
	}{
		{"first with a message", `[{"class":"A","message":""},{"class":"B","message":"b"},{"class":"C","message":"c"}]`, events.ErrorEntry{Class: "B", Message: "b"}, true},
		{"only a truncation marker", `[{"truncated":3}]`, events.ErrorEntry{}, false},
		{"empty", `[]`, events.ErrorEntry{}, false},
		{"not an array", `{"class":"A","message":"a"}`, events.ErrorEntry{}, false},
		{"an entry of the wrong shape is skipped", `[5,{"class":"B","message":"b"}]`, events.ErrorEntry{Class: "B", Message: "b"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := report.FailedUnit{Errors: json.RawMessage(tc.errors)}.FirstError()
			require.Equalf(t, tc.wantOK, ok, "got ok %v, want %v", ok, tc.wantOK)
			require.Equalf(t, tc.want, got, "got %+v, want %+v", got, tc.want)
		})
	}
}

func TestFlaky(t *testing.T) {
	tests := []struct {
		name string
		log  func(*logBuilder)
		want []string
	}{
		{"requeued then passed", func(b *logBuilder) {
			b.delivered("a", "w1").requeued("a", "w1", 1).delivered("a", "w2").passed("a", "w2", 1)
		}, []string{"a"}},
		{"requeued, then reclaimed, then passed", func(b *logBuilder) {
			b.delivered("a", "w1").requeued("a", "w1", 1).delivered("a", "w2").reclaimed("a", "w3", "w2").passed("a", "w3", 1)
		}, []string{"a"}},
		{"reclaimed only, then passed: not flaky", func(b *logBuilder) {
			b.delivered("a", "w1").reclaimed("a", "w2", "w1").passed("a", "w2", 1)
		}, []string{}},
		{"requeued then failed for good: not flaky", func(b *logBuilder) {
			b.delivered("a", "w1").requeued("a", "w1", 1).delivered("a", "w2").retryExhausted("a", "w2", 1, boom("E", "m"))
		}, []string{}},
		{"requeued, not finalized yet: not flaky", func(b *logBuilder) {
			b.delivered("a", "w1").requeued("a", "w1", 1)
		}, []string{}},
		{"passed at once: not flaky", func(b *logBuilder) {
			b.delivered("a", "w1").passed("a", "w1", 1)
		}, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newLog(t)
			tc.log(b)
			got := report.NewLog(b.events()).Flaky()
			require.Equalf(t, tc.want, got, "got %v, want %v", got, tc.want)
		})
	}
}

func TestNeverFinalized(t *testing.T) {
	log := newLog(t).
		delivered("done", "w1").passed("done", "w1", 1).
		delivered("held", "w1").reclaimed("held", "w2", "w1").
		delivered("requeued", "w3").requeued("requeued", "w3", 1).
		abandoned("held", "w2").
		events()
	got := report.NewLog(log).NeverFinalized([]string{"never", "held", "done", "requeued"})
	want := []report.UnfinalizedUnit{
		{UnitID: "never", LastWorkerID: nil},
		{UnitID: "held", LastWorkerID: ptr("w2")},     // the reclaim is the latest hold
		{UnitID: "requeued", LastWorkerID: ptr("w3")}, // a requeue is not a hold
	}
	require.Equalf(t, want, got, "got %+v, want %+v", got, want)

	require.Equal(t, []report.UnfinalizedUnit{}, report.NewLog(nil).NeverFinalized(nil), "got a nil list, want []")
}

func TestAbandonedRetryAndReclaimCounts(t *testing.T) {
	log := newLog(t).
		delivered("a", "w1").abandoned("a", "w1").reclaimed("a", "w2", "w1").requeued("a", "w2", 1).
		delivered("b", "w3").requeued("b", "w3", 1).delivered("b", "w3").requeued("b", "w3", 2).delivered("b", "w1").passed("b", "w1", 1).
		delivered("c", "w1").reclaimed("c", "w2", "w1").reclaimed("c", "w3", "w2").abandoned("c", "w3").
		delivered("d", "w1").passed("d", "w1", 1).
		events()
	l := report.NewLog(log)

	require.Equal(t, []string{"a", "c"}, l.Abandoned())
	require.Equal(t, report.UnitCounts{{UnitID: "a", Count: 1}, {UnitID: "b", Count: 2}}, l.RetryCounts())
	require.Equal(t, report.UnitCounts{{UnitID: "a", Count: 1}, {UnitID: "c", Count: 2}}, l.ReclaimCounts())

	n, ok := l.RetryCounts().Get("b")
	require.Truef(t, ok && n == 2, "got RetryCounts b = %d, %v, want 2, true", n, ok)
	_, ok = l.RetryCounts().Get("d")
	require.False(t, ok, "got d listed in RetryCounts, want it absent (never requeued)")
}

func TestUnitCountsEncodeInOrder(t *testing.T) {
	c := report.UnitCounts{{UnitID: "z<&>", Count: 2}, {UnitID: "a", Count: 1}}
	got, err := c.MarshalJSON()
	require.NoError(t, err)
	require.Equalf(t, `{"z<&>":2,"a":1}`, string(got), "got %s", got)

	got, err = report.UnitCounts{}.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, `{}`, string(got))
}

func TestWorkerErrorsAndStaleRejectionsAreRawInOrder(t *testing.T) {
	log := newLog(t).
		workerError("w1", events.PhaseBoot, "A", "first").
		delivered("a", "w1").
		stale("a", "w2", events.OperationFinalize).
		workerError("w2", events.PhaseRedis, "B", "second").
		stale("a", "w3", events.OperationRequeue).
		events()
	l := report.NewLog(log)

	we := l.WorkerErrors()
	require.Len(t, we, 2)
	require.Equal(t, log[0].Raw, we[0].Raw)
	require.Equal(t, log[3].Raw, we[1].Raw)

	sr := l.StaleRejections()
	require.Len(t, sr, 2)
	require.Equal(t, "finalize", sr[0].Operation)
	require.Equal(t, "requeue", sr[1].Operation)
}

func TestViolations(t *testing.T) {
	log := newLog(t).
		delivered("once", "w1").passed("once", "w1", 1).
		delivered("twice", "w1").passed("twice", "w1", 1).failed("twice", "w2", 1).
		delivered("stray", "w1").passed("stray", "w1", 1).passed("stray", "w1", 1).
		delivered("never", "w1").
		events()
	got := report.NewLog(log).Violations([]string{"once", "twice", "never"})
	want := []report.Violation{
		{UnitID: "twice", Finalized: 2},
		{UnitID: "never", Finalized: 0},
		{UnitID: "stray", Finalized: 2}, // not in the manifest, still reported
	}
	require.Equalf(t, want, got, "got %+v, want %+v", got, want)

	ok := newLog(t).delivered("a", "w").passed("a", "w", 1).events()
	require.Empty(t, report.NewLog(ok).Violations([]string{"a"}))
}
