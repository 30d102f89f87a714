package embedded

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reference script's callers' flow, through queue.Transition on a build
// laid out by hand (as integration/fixture_test.go does), on the embedded
// server: every reply as on Redis.
func TestTransitionsOnEmbedded(t *testing.T) {
	_, c := start(t)
	ctx := context.Background()
	keys := queue.BuildKeys("b1")
	script := []string{keys.Units, keys.Priority, keys.Attempts, keys.Meta, keys.UnitState, keys.Workers}
	for _, s := range []string{keys.Units, keys.Priority} {
		require.NoError(t, do(t, c, "XGROUP", "CREATE", s, queue.Group, "0", "MKSTREAM").Error())
	}
	units := []string{"u1", "u2", "u3"}
	for _, u := range units {
		require.NoError(t, do(t, c, "XADD", keys.Units, "*", "id", u, "type", "file").Error())
		require.NoError(t, do(t, c, "HSET", keys.UnitState, u, `{"retry_index":0,"reclaim_count":0,"entered_retry":false}`).Error())
	}
	require.NoError(t, do(t, c, "HSET", keys.Meta, "total_units", "3", "unit_type", "file", "state", "ready", "ready_at", "1",
		"finalized_count", "0", "requeued_units_count", "0", "max_requeues", "1", "requeue_tolerance", "1", "max_reclaims", "3", "guarded", "1").Error())
	transition := func(argv ...string) []any {
		t.Helper()
		reply, err := queue.Transition(ctx, c, script, argv)
		require.NoError(t, err, "%v", argv)
		return reply
	}
	reserve := func(worker string) (stream, id, unit string) {
		t.Helper()
		for _, s := range []string{keys.Priority, keys.Units} {
			res, err := c.Do(ctx, c.B().Xreadgroup().Group(queue.Group, worker).Count(1).Streams().Key(s).Id(">").Build()).AsXRead()
			if rueidis.IsRedisNil(err) {
				continue
			}
			require.NoError(t, err)
			for _, entries := range res {
				if len(entries) > 0 {
					name := "units"
					if s == keys.Priority {
						name = "units:priority"
					}
					return name, entries[0].ID, entries[0].FieldValues["id"]
				}
			}
		}
		t.Fatal("nothing to reserve")
		return "", "", ""
	}
	const ttl = "600000"

	// u1: delivered, two heartbeats (a second one used to find the
	// reservation stale on plain miniredis), finalized passed.
	s, id, u := reserve("w1")
	assert.Equal(t, []any{"OK", int64(1), int64(0), int64(0)}, transition("delivery_accounting", "w1", ttl, s, id, u))
	for range 2 {
		assert.Equal(t, []any{"OK"}, transition("heartbeat", "w1", ttl, s, id, "1", u))
	}
	assert.Equal(t, []any{"OK"}, transition("finalize", "w1", ttl, s, id, "1", u, "passed", "12"))
	assert.Equal(t, []any{"STALE"}, transition("finalize", "w1", ttl, s, id, "1", u, "passed", "12"))

	// u2: failed, requeued on the priority stream, served first, passed.
	s, id, u = reserve("w1")
	assert.Equal(t, "u2", u)
	transition("delivery_accounting", "w1", ttl, s, id, u)
	assert.Equal(t, []any{"REQUEUED", int64(1)}, transition("requeue", "w1", ttl, s, id, "1", u, "file", "1", "1", "5", "1 failure(s)", "[]"))
	s, id, u = reserve("w2")
	assert.Equal(t, "units:priority", s)
	assert.Equal(t, "u2", u)
	assert.Equal(t, []any{"OK", int64(1), int64(1), int64(0)}, transition("delivery_accounting", "w2", ttl, s, id, u))
	assert.Equal(t, []any{"OK"}, transition("finalize", "w2", ttl, s, id, "1", u, "passed", "7"))

	// u3: w1 goes silent; w2 reclaims it (delivery count 2), w1's late
	// heartbeat and finalize are stale, w2 finalizes.
	s, id, u = reserve("w1")
	assert.Equal(t, "u3", u)
	transition("delivery_accounting", "w1", ttl, s, id, u)
	assert.Equal(t, []any{"NONE"}, transition("reclaim", "w2", ttl, "60000", "3"))
	time.Sleep(60 * time.Millisecond)
	assert.Equal(t, []any{"OK", s, id, "u3", "file", int64(2), int64(0), int64(1)}, transition("reclaim", "w2", ttl, "50", "3"))
	assert.Equal(t, []any{"STALE"}, transition("heartbeat", "w1", ttl, s, id, "1", u))
	assert.Equal(t, []any{"STALE"}, transition("finalize", "w1", ttl, s, id, "1", u, "passed", "1"))
	assert.Equal(t, []any{"OK"}, transition("heartbeat", "w2", ttl, s, id, "2", u))
	assert.Equal(t, []any{"OK"}, transition("finalize", "w2", ttl, s, id, "2", u, "failed", "3", "test_failure", `[{"example_id":"u3","description":"d","class":"c","message":"m","backtrace":[]}]`))

	meta, err := do(t, c, "HGETALL", keys.Meta).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, "3", meta["finalized_count"])
	assert.Equal(t, "1", meta["requeued_units_count"])
	entries, err := do(t, c, "XRANGE", keys.Attempts, "-", "+").AsXRange()
	require.NoError(t, err)
	var types []string
	for _, e := range entries {
		ev, err := events.Decode([]byte(e.FieldValues["json"]))
		require.NoError(t, err)
		types = append(types, ev.Type+" "+*ev.UnitID)
	}
	assert.Equal(t, []string{
		"delivered u1", "finalized u1",
		"delivered u2", "requeued u2", "delivered u2", "finalized u2",
		"delivered u3", "reclaimed u3", "finalized u3",
	}, types)
	for _, key := range script {
		ttl, err := do(t, c, "PTTL", key).AsInt64()
		require.NoError(t, err)
		assert.Greater(t, ttl, int64(0), "%s has a TTL", key)
	}
}

// Workers of the worker package on the embedded server: publish, join,
// heartbeat through a long unit, requeue, abandon, reclaim, abort, and the
// report's verdict.
func TestWorkersOnEmbedded(t *testing.T) {
	_, c := start(t)
	ctx := context.Background()
	suite := worker.Suite{Units: []string{"pass1", "slow", "fail", "flaky", "hang", "pass2"}, Command: "test"}
	var flakyRuns atomic.Int32
	fn := func(ctx context.Context, r queue.Reservation) worker.Result {
		switch r.UnitID {
		case "slow": // several heartbeats
			time.Sleep(550 * time.Millisecond)
		case "fail":
			return worker.Result{Outcome: worker.Failed, Errors: []events.ErrorEntry{{Class: "exit status 1", Message: "boom"}}}
		case "flaky":
			if flakyRuns.Add(1) == 1 {
				return worker.Result{Outcome: worker.Failed}
			}
		case "hang":
			if r.ReclaimCount == 0 {
				<-ctx.Done() // until the worker aborts
				return worker.Result{Outcome: worker.Failed, NoRequeue: true}
			}
		}
		return worker.Result{Outcome: worker.Passed}
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = worker.Run(ctx, c, suite, worker.Config{
				BuildID: "b1", WorkerID: "w" + strconv.Itoa(i+1), Timeout: 300 * time.Millisecond, MaxUnitDuration: 600 * time.Millisecond,
				MaxRequeues: 1, RequeueTolerance: 1, PollInterval: 20 * time.Millisecond, Output: io.Discard, Log: io.Discard,
			}, fn)
		}()
	}
	wg.Wait()
	codes := map[int]int{}
	for _, err := range errs {
		codes[worker.ExitCode(err)]++
	}
	assert.Equal(t, map[int]int{0: 2, 4: 1}, codes, "%v", errs)

	r, err := report.Run(ctx, c, "b1", report.Options{Timeout: time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, report.VerdictFailed, r.Verdict, r.Headline)
	var failed []string
	for _, f := range r.Log.Failed() {
		failed = append(failed, fmt.Sprintf("%s/%s", f.UnitID, *f.Reason))
	}
	assert.Equal(t, []string{"fail/retry_budget_exhausted"}, failed)
	assert.Equal(t, []string{"flaky"}, r.Log.Flaky())
	assert.Equal(t, []string{"hang"}, r.Log.Abandoned())
	n, _ := r.Log.ReclaimCounts().Get("hang")
	assert.Equal(t, int64(1), n)
	_, slowReclaimed := r.Log.ReclaimCounts().Get("slow")
	assert.False(t, slowReclaimed, "heartbeats kept the slow unit with its worker")
	assert.Empty(t, r.Log.StaleRejections())
	assert.Empty(t, r.Log.WorkerErrors())
	assert.Empty(t, r.Violations)
}
