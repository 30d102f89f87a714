package integration

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
)

// reportSummary is the part of the JSON summary these tests check.
type reportSummary struct {
	BuildID        string  `json:"build_id"`
	State          *string `json:"state"`
	Verdict        string  `json:"verdict"`
	ExitCode       int     `json:"exit_code"`
	Message        string  `json:"message"`
	TotalUnits     *int64  `json:"total_units"`
	FinalizedCount *int64  `json:"finalized_count"`
	Failed         []struct {
		UnitID   string `json:"unit_id"`
		Reason   string `json:"reason"`
		WorkerID string `json:"worker_id"`
		Errors   []struct {
			Class   string `json:"class"`
			Message string `json:"message"`
		} `json:"errors"`
	} `json:"failed"`
	Flaky          []string `json:"flaky"`
	NeverFinalized []struct {
		UnitID       string  `json:"unit_id"`
		LastWorkerID *string `json:"last_worker_id"`
	} `json:"never_finalized"`
	RetryCounts   map[string]int64           `json:"retry_counts"`
	Workers       map[string]json.RawMessage `json:"workers"`
	LoadErrors    []string                   `json:"load_errors"`
	WorkerErrors  []json.RawMessage          `json:"worker_errors"`
	StaleRejected int                        `json:"stale_rejections"`
}

func reportParseSummary(t testing.TB, out reportOutputs) reportSummary {
	t.Helper()
	var s reportSummary
	require.NoError(t, json.Unmarshal([]byte(out.summary), &s), "summary:\n%s", out.summary)
	return s
}

// reportJUnitCounts parses the JUnit file back and returns its suite's
// tests, failures and errors.
func reportJUnitCounts(t testing.TB, out reportOutputs) [3]int {
	t.Helper()
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Errors   int `xml:"errors,attr"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(out.junit), &doc), "junit:\n%s", out.junit)
	require.Len(t, doc.Suites, 1)
	s := doc.Suites[0]
	return [3]int{s.Tests, s.Failures, s.Errors}
}

func TestReportMissing(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	r := reportRun(e, report.Options{InitTimeout: 300 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "gave up before the init timeout")

	assert.Equal(t, report.VerdictMissing, r.Verdict)
	assert.Equal(t, report.ExitInfrastructure, r.ExitCode)
	out := reportWrite(t, r)
	s := reportParseSummary(t, out)
	assert.Equal(t, "missing", s.Verdict)
	assert.Equal(t, 2, s.ExitCode)
	assert.Nil(t, s.State)
	assert.Nil(t, s.TotalUnits)
	assert.Contains(t, s.Message, "never initialized (no manifest or tombstone after 0.3s)")
	assert.Empty(t, out.failed)
	assert.Equal(t, [3]int{1, 0, 1}, reportJUnitCounts(t, out), "one build-level error")
}

func TestReportMissingWithAFakeClock(t *testing.T) {
	// The default init timeout (300 s) takes no real time with a clock whose
	// sleeps return at once: one poll per second of the timeout.
	e := newEnv(t)
	clock := &reportFakeClock{now: time.Unix(0, 0)}
	start := time.Now()
	r := reportRun(e, report.Options{Clock: clock})
	assert.Equal(t, report.VerdictMissing, r.Verdict)
	assert.Equal(t, 300, clock.sleeps, "one sleep per poll interval of the init timeout")
	assert.Less(t, time.Since(start), 30*time.Second)
}

func TestReportWaitsForTheBuildToAppear(t *testing.T) {
	e := newEnv(t)
	type result struct {
		r   *report.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := report.Run(e.ctx, e.client, reportBuildID(e), report.Options{
			PollInterval: 50 * time.Millisecond, InitTimeout: 10 * time.Second, InactiveTimeout: time.Second,
		})
		done <- result{r, err}
	}()
	time.Sleep(200 * time.Millisecond)
	e.publish([]string{"a"}, nil)
	got := <-done
	require.NoError(t, got.err)
	// Published but never worked on (ready_at is long past): the report saw
	// the build appear, then gave up on completion as inactive.
	assert.Equal(t, report.VerdictIncomplete, got.r.Verdict)
	assert.Contains(t, got.r.Headline, "workers inactive")
}

func TestReportExpired(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.do("SET", e.keys.Exists, "1", "PX", "60000").Error())
	r := reportRun(e, report.Options{InitTimeout: time.Second})
	assert.Equal(t, report.VerdictExpired, r.Verdict)
	assert.Equal(t, report.ExitIncomplete, r.ExitCode)

	out := reportWrite(t, r)
	s := reportParseSummary(t, out)
	assert.Equal(t, "expired", s.Verdict)
	assert.Equal(t, 3, s.ExitCode)
	assert.Contains(t, out.console, "report: build "+reportBuildID(e)+": expired\n")
	assert.Contains(t, out.console, "units: unknown (no manifest)")
	assert.Equal(t, [3]int{1, 0, 1}, reportJUnitCounts(t, out))
}

func TestReportInitFailed(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.do("HSET", e.keys.Meta, "state", "init_failed", "ready_at", "1", "total_units", "2",
		"unit_type", "package", "load_errors", `["./a: no Go files","./b: syntax error"]`).Error())
	require.NoError(t, e.do("SET", e.keys.Exists, "1", "PX", "60000").Error())

	r := reportRun(e, report.Options{})
	assert.Equal(t, report.VerdictInitFailed, r.Verdict)
	assert.Equal(t, report.ExitIncomplete, r.ExitCode)
	assert.Equal(t, []string{"./a: no Go files", "./b: syntax error"}, r.Details)

	out := reportWrite(t, r)
	s := reportParseSummary(t, out)
	require.NotNil(t, s.State)
	assert.Equal(t, "init_failed", *s.State)
	assert.Equal(t, []string{"./a: no Go files", "./b: syntax error"}, s.LoadErrors)
	assert.Contains(t, out.console, "failed to initialize: 2 load error(s)\n")
	assert.Contains(t, out.console, "  ./b: syntax error\n")
}

func TestReportIncompleteWhenWorkersFallSilent(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"a", "b", "c"}, map[string]string{"unit_ids": `["a","b","c"]`, "unit_type": "package"})
	reportSettle(e, "w1", true)
	e.reservation("w2") // b, held by a worker that then falls silent

	start := time.Now()
	r := reportRun(e, report.Options{InactiveTimeout: time.Second, PollInterval: 100 * time.Millisecond})
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "gave up while w2 was still recently seen")

	assert.Equal(t, report.VerdictIncomplete, r.Verdict)
	assert.Equal(t, report.ExitIncomplete, r.ExitCode)
	assert.Contains(t, r.Headline, "incomplete: workers inactive for ")
	assert.Contains(t, r.Headline, "(--inactive-timeout 1s); 1 of 3 units finalized")
	assert.Equal(t, []string{"never finalized: b (last worker w2)", "never finalized: c (never delivered)"}, r.Details)

	out := reportWrite(t, r)
	s := reportParseSummary(t, out)
	require.Len(t, s.NeverFinalized, 2)
	assert.Equal(t, "b", s.NeverFinalized[0].UnitID)
	assert.Equal(t, "w2", *s.NeverFinalized[0].LastWorkerID)
	assert.Nil(t, s.NeverFinalized[1].LastWorkerID)
	assert.Equal(t, int64(1), *s.FinalizedCount)
	assert.Contains(t, s.Workers, "w1")
	assert.Contains(t, s.Workers, "w2")
	assert.Equal(t, "b\nc\n", out.failed)
	assert.Equal(t, [3]int{3, 0, 2}, reportJUnitCounts(t, out))
}

func TestReportIncompleteAfterTheTimeout(t *testing.T) {
	// Workers stay alive (ready_at is now and a heartbeat keeps going), so
	// only the overall timeout ends the wait.
	e := newEnv(t)
	e.publish([]string{"a"}, map[string]string{"ready_at": strconv.FormatInt(reportServerMS(e), 10)})
	res := e.reservation("w1")
	ctx, stop := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = e.build.Heartbeat(ctx, res)
			time.Sleep(50 * time.Millisecond)
		}
	})
	r, err := report.Run(e.ctx, e.client, reportBuildID(e), report.Options{Timeout: 500 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	stop()
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, report.VerdictIncomplete, r.Verdict)
	assert.Equal(t, "incomplete: 0 of 1 units finalized after 0.5s (--wait)", r.Headline)
	assert.Equal(t, []string{"never finalized: a (last worker w1)"}, r.Details)
}

func TestReportPassed(t *testing.T) {
	// Meta lists no unit ids: the report takes the manifest from the units
	// stream. One unit is flaky: it fails, is requeued, and passes.
	e := newEnv(t)
	e.publish([]string{"./a", "./b", "./c"}, map[string]string{
		"max_requeues": "1", "requeue_tolerance": "1", "unit_type": "package",
		"seed": "77", "fingerprint": "f1", "revision": "r1",
	})
	reportSettle(e, "w1", true)

	first := e.reservation("w2")
	rq, err := e.build.Requeue(e.ctx, first, queue.Result{Outcome: "failed", DurationMS: 10, FailureSummary: "1 failure", Errors: reportErrors("TestB", "flake")}, queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1})
	require.NoError(t, err)
	require.True(t, rq.Requeued)
	retry := e.reservation("w1") // the priority stream first: ./b again
	require.Equal(t, first.UnitID, retry.UnitID)
	require.NoError(t, e.build.Finalize(e.ctx, retry, queue.Result{Outcome: "passed", DurationMS: 900}))
	reportSettle(e, "w2", true)

	r := reportRun(e, report.Options{})
	assert.Equal(t, report.VerdictPassed, r.Verdict, r.Headline)
	assert.Equal(t, report.ExitOK, r.ExitCode)
	assert.Empty(t, r.Violations)
	assert.Equal(t, []string{"./a", "./b", "./c"}, r.Manifest)

	out := reportWrite(t, r)
	s := reportParseSummary(t, out)
	assert.Equal(t, "passed", s.Verdict)
	assert.Equal(t, 0, s.ExitCode)
	assert.Equal(t, []string{first.UnitID}, s.Flaky)
	assert.Equal(t, map[string]int64{first.UnitID: 1}, s.RetryCounts)
	assert.Equal(t, int64(3), *s.FinalizedCount)
	assert.Empty(t, s.Failed)
	assert.Empty(t, out.failed)
	assert.Contains(t, out.summary, `"seed": 77,`)
	assert.Contains(t, out.console, "report: build "+reportBuildID(e)+": passed\n  passed\n  units: 3 total, 3 finalized\n  flaky (passed after requeue): "+first.UnitID+"\n")
	assert.Equal(t, [3]int{3, 0, 0}, reportJUnitCounts(t, out))
	assert.Contains(t, out.junit, "flaky: passed after 1 retries")
}

func TestReportFailed(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"./api", "./db"}, map[string]string{"unit_ids": `["./api","./db"]`, "total_examples": "12"})
	reportSettle(e, "w1", true)
	reportSettle(e, "w2", false)

	r := reportRun(e, report.Options{MinExamples: 12})
	assert.Equal(t, report.VerdictFailed, r.Verdict)
	assert.Equal(t, report.ExitTestFailure, r.ExitCode)
	assert.Equal(t, "1 of 2 units failed", r.Headline)
	assert.Equal(t, []string{"failed: ./db (test_failure, worker w2) FAIL: db_test.go:12: connection refused"}, r.Details)

	out := reportWrite(t, r)
	s := reportParseSummary(t, out)
	require.Len(t, s.Failed, 1)
	f := s.Failed[0]
	assert.Equal(t, "./db", f.UnitID)
	assert.Equal(t, "test_failure", f.Reason)
	assert.Equal(t, "w2", f.WorkerID)
	require.Len(t, f.Errors, 1)
	assert.Equal(t, "FAIL", f.Errors[0].Class)
	assert.Equal(t, "./db\n", out.failed)
	assert.Contains(t, out.console, "units: 2 total, 2 finalized; examples: 12 selected\n")
	assert.Equal(t, [3]int{2, 1, 0}, reportJUnitCounts(t, out))
	assert.Contains(t, out.junit, `message="test_failure: FAIL: db_test.go:12: connection refused"`)

	// Too few examples comes before the failed units.
	r = reportRun(e, report.Options{MinExamples: 13})
	assert.Equal(t, report.VerdictFailed, r.Verdict)
	assert.Equal(t, "12 examples selected, fewer than --min-examples 13", r.Headline)
}

func TestReportReadsALongLogInPages(t *testing.T) {
	// More events than one XRANGE page: every one is read, in order.
	e := newEnv(t)
	units := make([]string, 700)
	for i := range units {
		units[i] = "u" + strconv.Itoa(i)
	}
	e.publish(units, nil)
	for range units {
		reportSettle(e, "w1", true)
	}
	r := reportRun(e, report.Options{})
	assert.Equal(t, report.VerdictPassed, r.Verdict, r.Headline)
	assert.Len(t, r.Log.Events(), 1400)
	assert.Equal(t, units, r.Log.Units())
	assert.Empty(t, r.Violations)
}

func TestReportCorruptLog(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"a"}, nil)
	reportSettle(e, "w1", true)
	require.NoError(t, e.do("XADD", e.keys.Attempts, "*", "json", `{"type":"finalized","unit_id":`).Error())
	r := reportRun(e, report.Options{})
	assert.Equal(t, report.VerdictCorrupt, r.Verdict)
	assert.Equal(t, report.ExitInfrastructure, r.ExitCode)
	assert.ErrorIs(t, r.Err, report.ErrCorrupt)
	assert.Contains(t, r.Headline, "attempts entry ")
}

func TestReportUnreachable(t *testing.T) {
	// The report's client goes through a proxy that the test cuts, so the
	// shared server stays up for every other test.
	e := newEnv(t)
	e.publish([]string{"a"}, nil)
	proxy := reportProxy(t, srv.Addr())
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.addr()}, DisableCache: true, DisableRetry: true})
	require.NoError(t, err)
	defer c.Close()
	proxy.cut()

	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	r, err := report.Run(ctx, c, reportBuildID(e), report.Options{})
	require.NoError(t, err)
	assert.Equal(t, report.VerdictUnreachable, r.Verdict)
	assert.Equal(t, report.ExitInfrastructure, r.ExitCode)
	assert.ErrorIs(t, r.Err, report.ErrUnreachable)
	assert.Contains(t, r.Headline, "redis unreachable: ")
}

func TestReportStopsWhenTheContextEnds(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	r, err := report.Run(ctx, e.client, reportBuildID(e), report.Options{PollInterval: 50 * time.Millisecond})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Nil(t, r)
}

// reportProxy forwards connections to a server until cut.
func reportProxy(t testing.TB, target string) *tcpProxy {
	return newTCPProxy(t, target, func(down, up net.Conn) {
		go reportPipe(down, up)
		go reportPipe(up, down)
	})
}

func reportPipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}
