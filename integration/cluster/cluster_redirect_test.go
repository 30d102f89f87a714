package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hopper-queue/hopper/queue"
)

// otherPrimary returns a primary that does not serve slot.
func otherPrimary(t testing.TB, slot int) string {
	t.Helper()
	home, err := cl.PrimaryOf(t.Context(), slot)
	require.NoError(t, err)
	primaries, err := cl.Primaries(t.Context())
	require.NoError(t, err)
	for _, p := range primaries {
		if p != home {
			return p
		}
	}
	t.Fatal("no other primary")
	return ""
}

// A build's slot moves to another primary after the client learned the
// slot map: the client's next transaction is sent to the old primary,
// which answers MOVED, and the transaction starts over on the new one.
func TestClusterTransactionAfterMoved(t *testing.T) {
	b := newBuild(t, "")
	units := []string{"u1", "u2"}
	b.publish(manifestOf(units))
	opts := queue.ReserveOptions{Timeout: time.Minute, Block: 10 * time.Millisecond}
	r, ok, err := b.q.Reserve(b.ctx, "w1", opts)
	require.NoError(t, err)
	require.True(t, ok)

	from, to := b.primary(), otherPrimary(t, b.slot())
	require.NoError(t, cl.MigrateSlot(b.ctx, b.slot(), to))
	require.Equal(t, to, b.primary())
	t.Logf("slot %d moved from %s to %s", b.slot(), from, to)

	start := time.Now()
	require.NoError(t, b.q.Heartbeat(b.ctx, r), "heartbeat after the slot moved")
	retries, _ := b.retries()
	t.Logf("heartbeat after MOVED: %v, %d retries", time.Since(start), retries[queue.ModeHeartbeat])
	assert.Positive(t, retries[queue.ModeHeartbeat], "the first attempt went to the old primary and got MOVED")

	require.NoError(t, b.q.Finalize(b.ctx, r, queue.Result{Outcome: "passed", DurationMS: 1}))
	r, ok, err = b.q.Reserve(b.ctx, "w1", opts)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, b.q.Finalize(b.ctx, r, queue.Result{Outcome: "passed", DurationMS: 1}))
	b.requireFinalizedOnce(units)
	b.requireOnOneNode()
}

// After a MOVED, the queue sends a plain command on the build's slot before
// it tries again, "refreshing the client's slot map first" (queue/internal/txn/runner.go),
// so the second attempt should reach the slot's new primary. It does not:
// rueidis's plain command follows the redirect but leaves the slot map as
// it is when it already holds a connection to the new primary (every
// primary, in a cluster whose client has used all shards), and the map is
// only refreshed by a background refresh that starts up to a second later.
// Until then every attempt goes to the old primary and gets MOVED again:
// with MaxAttempts 3, the transition fails with ErrContention.
func TestClusterSecondAttemptReachesNewPrimary(t *testing.T) {
	b := newBuild(t, "")
	units := []string{"u1"}
	b.publish(manifestOf(units))
	reader := sdkmetric.NewManualReader()
	q, err := queue.Open(b.client, b.id, queue.Options{TTL: ttl, MaxAttempts: 3,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	r, ok, err := q.Reserve(b.ctx, "w1", queue.ReserveOptions{Timeout: time.Minute, Block: 10 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)
	// The client has used every primary: it holds a connection to each.
	for primary, ids := range idsOnEveryPrimary(t, 1) {
		key := queue.BuildKeys(ids[0]).Meta
		require.NoError(t, b.client.Do(b.ctx, b.client.B().Exists().Key(key).Build()).Error(), primary)
	}

	require.NoError(t, cl.MigrateSlot(b.ctx, b.slot(), otherPrimary(t, b.slot())))
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	err = q.Heartbeat(ctx, r)
	retries, _ := countersOf(t, reader)
	t.Logf("heartbeat: %v after %v, %d retries", err, time.Since(start), retries[queue.ModeHeartbeat])
	require.NoError(t, err, "a transition whose slot moved, with MaxAttempts 3")
	require.NoError(t, q.Finalize(ctx, r, queue.Result{Outcome: "passed", DurationMS: 1}))
	b.requireFinalizedOnce(units)
}

// An idle worker's units read goes on a connection of its own, which
// watches its guard (queue/internal/engine/kept_watch.go) and does not follow redirects.
// After the build's slot moved, that read meets MOVED: the reservation
// must read as it would without the kept watch, and the worker's
// Liveness and its next reservation go on.
func TestClusterIdleReadAfterMoved(t *testing.T) {
	b := newBuild(t, "")
	units := []string{"u1"}
	b.publish(manifestOf(units))
	opts := queue.ReserveOptions{Timeout: time.Minute, Block: 10 * time.Millisecond}
	r, ok, err := b.q.Reserve(b.ctx, "w1", opts)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = b.q.Reserve(b.ctx, "w2", opts)
	require.NoError(t, err)
	require.False(t, ok, "nothing left: w2 is idle")

	require.NoError(t, cl.MigrateSlot(b.ctx, b.slot(), otherPrimary(t, b.slot())))
	_, ok, err = b.q.Reserve(b.ctx, "w2", opts)
	require.NoError(t, err, "w2's idle read after the slot moved")
	require.False(t, ok)
	require.NoError(t, b.q.Liveness(b.ctx, "w2", ""))
	require.NoError(t, b.q.Finalize(b.ctx, r, queue.Result{Outcome: "passed", DurationMS: 1}))
	_, ok, err = b.q.Reserve(b.ctx, "w2", opts)
	require.NoError(t, err)
	require.False(t, ok)
	b.requireFinalizedOnce(units)
	b.requireOnOneNode()
}
