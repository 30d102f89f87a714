package report_test

import (
	"bytes"
	"testing"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/testresults"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countsBuild is a complete build of two units, ./a passed and ./c failed
// through the retry budget, its meta holding fields.
func countsBuild(t *testing.T, fields map[string]string, results report.TestResults) *report.Report {
	t.Helper()
	log := newLog(t).
		delivered("./a", "w1").passed("./a", "w1", 100).
		delivered("./c", "w1").retryExhausted("./c", "w1", 0, boom("FAIL", "want 1")).
		events()
	units := []string{"./a", "./c"}
	n := int64(2)
	return report.Judge(report.Observation{
		BuildID: "b1", Presence: report.PresenceMeta,
		Meta:     report.Meta{State: report.StateReady, TotalUnits: 2, FinalizedCount: 2, UnitIDs: units, Fields: fields},
		Manifest: units, FinalizedCount: &n, Events: log, TestResults: results,
	}, report.Options{})
}

func console(t *testing.T, r *report.Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.WriteConsole(&b))
	return b.String()
}

// TestConsoleCountsTestsNotUnits: the console counts the tests the
// commands reported, and no "examples" that are only the units (issue 43:
// "examples: 63 selected" beside a JUnit of 5,649 test cases).
func TestConsoleCountsTestsNotUnits(t *testing.T) {
	cases := []testresults.Case{
		{Unit: "./a", Name: "TestOne", Status: testresults.Passed},
		{Unit: "./a", Name: "TestTwo", Status: testresults.Passed},
		{Unit: "./a", Name: "TestThree", Status: testresults.Failed},
	}
	results := report.TestResults{1: {
		queue.AttemptRef{UnitID: "./a", Stream: "units", EntryID: "1-0", WorkerID: "w1"}: testresults.Encode(cases, testresults.DefaultLimit),
	}}
	out := console(t, countsBuild(t, nil, results))
	assert.Contains(t, out, "  units: 2 total, 2 finalized; tests: 3, 1 failed\n")
	assert.NotContains(t, out, "examples")

	out = console(t, countsBuild(t, nil, nil))
	assert.Contains(t, out, "  units: 2 total, 2 finalized\n")
	assert.NotContains(t, out, "examples")
}

// TestFailedNotRetryBudgetWhenRetriesAreOff: a build that retries nothing
// shows its failures as failed, not retry_budget_exhausted; one that
// retries keeps the log's reason.
func TestFailedNotRetryBudgetWhenRetriesAreOff(t *testing.T) {
	for _, off := range []map[string]string{
		{"max_requeues": "0", "requeue_tolerance": "0"},
		{"max_requeues": "2", "requeue_tolerance": "0"},
	} {
		assert.Contains(t, console(t, countsBuild(t, off, nil)), "failed: ./c (failed, worker w1) FAIL: want 1\n", off)
	}
	on := map[string]string{"max_requeues": "1", "requeue_tolerance": "0.5"}
	assert.Contains(t, console(t, countsBuild(t, on, nil)), "failed: ./c ("+events.ReasonRetryBudgetExhausted+", worker w1)")
}
