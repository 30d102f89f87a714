package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/timings"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The suite's timings on Redis: absent reads empty, a record merges over
// what earlier builds wrote and gives the key its TTL, and content that is
// not a table (garbage, another type) is ErrCorrupt on load and replaced,
// saying so, on the next record.
func TestTimingsOnRedis(t *testing.T) {
	ctx := t.Context()
	client, admin := srv.Client(t), srv.AdminClient(t)
	suite := "suite-" + redistest.BuildID(t)
	key := queue.TimingsKey(suite)
	assert.Equal(t, "hopper:timings:{"+suite+"}", key)

	got, err := queue.LoadTimings(ctx, client, suite)
	require.NoError(t, err)
	assert.Empty(t, got)

	replaced, err := queue.RecordTimings(ctx, client, suite, timings.Table{"a": time.Second, "b": 2 * time.Second}, time.Hour)
	require.NoError(t, err)
	assert.False(t, replaced)
	replaced, err = queue.RecordTimings(ctx, client, suite, timings.Table{"b": 3 * time.Second, "c": 4 * time.Second}, time.Hour)
	require.NoError(t, err)
	assert.False(t, replaced)
	got, err = queue.LoadTimings(ctx, client, suite)
	require.NoError(t, err)
	assert.Equal(t, timings.Table{"a": time.Second, "b": 3 * time.Second, "c": 4 * time.Second}, got)
	pttl, err := admin.Do(ctx, admin.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, time.Hour.Milliseconds(), pttl, 60000, "the key's TTL")

	for name, corrupt := range map[string]func(){
		"garbage": func() { require.NoError(t, admin.Do(ctx, admin.B().Set().Key(key).Value("{not json").Build()).Error()) },
		"another type": func() {
			require.NoError(t, admin.Do(ctx, admin.B().Del().Key(key).Build()).Error())
			require.NoError(t, admin.Do(ctx, admin.B().Hset().Key(key).FieldValue().FieldValue("a", "1").Build()).Error())
		},
	} {
		corrupt()
		_, err := queue.LoadTimings(ctx, client, suite)
		assert.ErrorIs(t, err, queue.ErrCorrupt, name)
		replaced, err := queue.RecordTimings(ctx, client, suite, timings.Table{"d": time.Second}, 0)
		require.NoError(t, err, name)
		assert.True(t, replaced, name)
		got, err = queue.LoadTimings(ctx, client, suite)
		require.NoError(t, err, name)
		assert.Equal(t, timings.Table{"d": time.Second}, got, name)
	}

	_, err = queue.LoadTimings(ctx, client, "a{b}")
	assert.ErrorIs(t, err, queue.ErrInvalidArgument)
}

// Builds of one suite that record at once each keep what the others wrote.
func TestTimingsRecordedTogether(t *testing.T) {
	ctx := t.Context()
	suite := "suite-" + redistest.BuildID(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		client := srv.Client(t)
		wg.Go(func() {
			_, errs[i] = queue.RecordTimings(ctx, client, suite, timings.Table{string(rune('a' + i)): time.Duration(i+1) * time.Second}, 0)
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "recorder %d", i)
	}
	got, err := queue.LoadTimings(ctx, srv.Client(t), suite)
	require.NoError(t, err)
	assert.Len(t, got, n, "every recorder's unit kept: %v", got)
}

// A worker that publishes with timings queues the units longest expected
// first (unknown units ahead, ties as given); the fingerprint and meta keep
// the given order, so a worker with no timings joins the same build; and
// the workers take units in the published order.
func TestPublishLongestFirst(t *testing.T) {
	f := newFleet(t, "short", "new", "long", "mid", "tied")
	f.suite.Expected = timings.Table{"short": time.Second, "long": 9 * time.Second, "mid": 5 * time.Second, "tied": 5 * time.Second, "gone": time.Hour}
	var mu sync.Mutex
	var taken []string
	measured := timings.Table{}
	take := func(ctx context.Context, r queue.Reservation) worker.Result {
		mu.Lock()
		taken = append(taken, r.UnitID)
		mu.Unlock()
		return worker.Result{Outcome: worker.Passed, Duration: time.Duration(len(r.UnitID)) * time.Millisecond}
	}
	cfg := f.config("ci-1")
	cfg.Measured = func(u string, d time.Duration) { mu.Lock(); measured[u] = d; mu.Unlock() }
	require.NoError(t, <-f.start(f.ctx, cfg, take))

	want := []string{"new", "long", "mid", "tied", "short"}
	assert.Equal(t, want, f.streamUnits(), "the units stream's order")
	assert.Equal(t, want, taken, "the order the worker took them in")
	assert.JSONEq(t, `["short","new","long","mid","tied"]`, f.hash(f.keys.Meta)["unit_ids"], "meta keeps the given order")
	assert.Equal(t, timings.Table{"short": 5 * time.Millisecond, "new": 3 * time.Millisecond, "long": 4 * time.Millisecond,
		"mid": 3 * time.Millisecond, "tied": 4 * time.Millisecond}, measured, "each unit's first attempt measured")

	// Another worker of the same suite without timings is not a mismatch.
	late := f.suite
	late.Expected = nil
	err := worker.Run(f.ctx, srv.Client(t), late, f.config("ci-2"), take)
	assert.False(t, errors.As(err, new(*queue.FingerprintMismatchError)), "joined with another order: %v", err)
	require.NoError(t, err)
}

// streamUnits lists the units stream's unit ids in stream order.
func (f *fleet) streamUnits() []string {
	f.t.Helper()
	entries, err := f.admin.Do(f.ctx, f.admin.B().Xrange().Key(f.keys.Units).Start("-").End("+").Build()).AsXRange()
	require.NoError(f.t, err)
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.FieldValues["id"])
	}
	return ids
}
