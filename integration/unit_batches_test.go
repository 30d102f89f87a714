package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startBatches runs one worker with a BatchFunc in the background.
func (f *fleet) startBatches(ctx context.Context, cfg worker.Config, fn worker.BatchFunc) <-chan error {
	client := srv.Client(f.t)
	done := make(chan error, 1)
	go func() { done <- worker.RunBatches(ctx, client, f.suite, cfg, fn) }()
	return done
}

// Each unit of a batch gets its own outcome, delivered event and finalized
// event: one failing unit fails alone.
func TestBatchPerUnitOutcomes(t *testing.T) {
	f := newFleet(t, units(6)...)
	var mu sync.Mutex
	var sizes []int
	fn := func(ctx context.Context, rs []queue.Reservation) []worker.Result {
		mu.Lock()
		sizes = append(sizes, len(rs))
		mu.Unlock()
		out := make([]worker.Result, len(rs))
		for i, r := range rs {
			out[i] = worker.Result{Outcome: worker.Passed, Output: []byte("ok " + r.UnitID + "\n")}
			if r.UnitID == "./pkg/p03" {
				out[i] = worker.Result{Outcome: worker.Failed, Errors: failure(r.UnitID, "boom")}
			}
		}
		return out
	}
	var chans []<-chan error
	for _, cfg := range f.workers(2, func(c *worker.Config) { c.Batch, c.Slots = 3, 1 }) {
		chans = append(chans, f.startBatches(f.ctx, cfg, fn))
	}
	for _, ch := range chans {
		require.NoError(t, <-ch)
	}
	f.requireFinalizedOnce()
	n, err := f.build.WorkerCount(f.ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, n, "the workers that batches are shared among")
	assert.Len(t, f.eventsOf(events.TypeDelivered), 6, "one delivered event per unit")
	assert.Less(t, len(sizes), 6, "units ran in batches: %v", sizes)
	s, _ := f.requireReport(report.VerdictFailed, 1)
	failed := s["failed"].([]any)
	require.Len(t, failed, 1)
	assert.Equal(t, "./pkg/p03", failed[0].(map[string]any)["unit_id"])
	for _, u := range f.suite.Units {
		if u != "./pkg/p03" {
			assert.Contains(t, f.out.String(), "ok "+u+"\n")
		}
	}
}

// Batches shrink near the end to the units left shared among the slots:
// 10 units, batches of at most 4, 2 slots: 4 (10/2 = 5), 3 (6/2), then
// ones (3/2, 2/2, 1/2).
func TestBatchesShrink(t *testing.T) {
	f := newFleet(t, units(10)...)
	var sizes []int
	fn := func(ctx context.Context, rs []queue.Reservation) []worker.Result {
		sizes = append(sizes, len(rs))
		return make([]worker.Result, len(rs)) // zero Outcome: failed, and no retry budget
	}
	cfg := f.config("ci-1")
	cfg.Batch, cfg.Slots = 4, 2
	require.NoError(t, <-f.startBatches(f.ctx, cfg, fn))
	assert.Equal(t, []int{4, 3, 1, 1, 1}, sizes)
	f.requireFinalizedOnce()
}

// A unit of a batch reclaimed by another worker while the batch runs is
// refused as stale when it settles; the batch's other unit still counts.
func TestBatchMemberReclaimedIsStale(t *testing.T) {
	f := newFleet(t, "u1", "u2")
	running, release := make(chan []queue.Reservation, 1), make(chan struct{})
	cfg := f.config("ci-1")
	cfg.Batch = 2
	done := f.startBatches(f.ctx, cfg, func(ctx context.Context, rs []queue.Reservation) []worker.Result {
		running <- rs
		<-release
		return []worker.Result{
			{Outcome: worker.Passed, Output: []byte("stale output of " + rs[0].UnitID + "\n")},
			{Outcome: worker.Passed, Output: []byte("counted output of " + rs[1].UnitID + "\n")},
		}
	})
	rs := <-running
	require.Len(t, rs, 2, "both units in one batch")
	require.Equal(t, "u1", rs[0].UnitID)
	taken, err := f.open().Reclaim(f.ctx, "thief", 0, 3)
	require.NoError(t, err)
	require.Equal(t, queue.ReclaimTaken, taken.Status)
	require.Equal(t, "u1", taken.Reservation.UnitID, "the thief takes the batch's first unit")
	close(release)

	require.Eventually(t, func() bool { return strings.Contains(f.log.String(), "reservation for u1 is stale; result discarded") },
		10*time.Second, 10*time.Millisecond)
	require.NoError(t, f.open().Finalize(f.ctx, taken.Reservation, queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}))
	require.NoError(t, <-done)
	f.requireFinalizedOnce()
	assert.NotContains(t, f.out.String(), "stale output")
	assert.Contains(t, f.out.String(), "counted output of u2")
	stale := f.eventsOf(events.TypeStaleRejected)
	require.Len(t, stale, 1)
	assert.Equal(t, "u1", stale[0]["unit_id"])
	byWorker := map[string]string{}
	for _, ev := range f.eventsOf(events.TypeFinalized) {
		byWorker[ev["unit_id"].(string)] = ev["worker_id"].(string)
	}
	assert.Equal(t, map[string]string{"u1": "thief", "u2": "ci-1"}, byWorker)
}
