package integration

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
)

// reportBuildID is the build id behind e's keys (hopper:{<id>}:meta).
func reportBuildID(e *env) string {
	m := e.keys.Meta
	return m[strings.IndexByte(m, '{')+1 : strings.LastIndexByte(m, '}')]
}

// reportFakeClock is a report.Clock whose Sleep advances time at once, so a
// wait of minutes takes one poll per interval and no real time.
type reportFakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps int
}

func (c *reportFakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *reportFakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps++
	return ctx.Err()
}

// reportRun runs the report on e's build with the client under test and
// checks that it wrote nothing to the build.
func reportRun(e *env, opts report.Options) *report.Report {
	e.t.Helper()
	var r *report.Report
	e.requireNoChange(func() {
		var err error
		r, err = report.Run(e.ctx, e.client, reportBuildID(e), opts)
		require.NoError(e.t, err)
	})
	return r
}

// reportOutputs writes every output of r into a fresh folder (nested, to
// check that folders are created) and returns their contents.
type reportOutputs struct {
	console, summary, failed, junit string
}

func reportWrite(t testing.TB, r *report.Report) reportOutputs {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out", "hopper")
	var console strings.Builder
	require.NoError(t, r.WriteConsole(&console))
	paths := []string{filepath.Join(dir, "summary.json"), filepath.Join(dir, "failed.txt"), filepath.Join(dir, "junit.xml")}
	require.NoError(t, r.WriteSummary(paths[0]))
	require.NoError(t, r.WriteFailed(paths[1]))
	require.NoError(t, r.WriteJUnit(paths[2]))
	read := func(p string) string {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return string(b)
	}
	return reportOutputs{console: console.String(), summary: read(paths[0]), failed: read(paths[1]), junit: read(paths[2])}
}

// reportSettle reserves one unit for worker and settles it: passed, or
// failed for good with one error.
func reportSettle(e *env, worker string, pass bool) queue.Reservation {
	e.t.Helper()
	r := e.reservation(worker)
	res := queue.Result{Outcome: "passed", DurationMS: 1500}
	if !pass {
		res = queue.Result{
			Outcome: "failed", DurationMS: 250, Reason: "test_failure",
			Errors: reportErrors("TestOpen", "db_test.go:12: connection refused"),
		}
	}
	require.NoError(e.t, e.build.Finalize(e.ctx, r, res))
	return r
}

// reportServerMS is the Redis server's clock, in epoch milliseconds.
func reportServerMS(e *env) int64 {
	e.t.Helper()
	t, err := e.do("TIME").AsStrSlice()
	require.NoError(e.t, err)
	sec, err := strconv.ParseInt(t[0], 10, 64)
	require.NoError(e.t, err)
	usec, err := strconv.ParseInt(t[1], 10, 64)
	require.NoError(e.t, err)
	return sec*1000 + usec/1000
}

// reportErrors is an errors payload of one failure.
func reportErrors(test, message string) []byte {
	return events.EncodeErrors([]events.ErrorEntry{{
		ExampleID: test, Description: test, Class: "FAIL", Message: message, Backtrace: []string{"db_test.go:12"},
	}})
}
