package live

import (
	"context"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A complete build's elapsed time stops at its last finalization: a status
// read later must not count the time since, or a build of a moment would
// read as long as ago as it ran.
func TestElapsedStopsWhenComplete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := redistest.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, srv.Terminate(ctx))
	})
	c := srv.Client(t)
	build := redistest.BuildID(t)
	b, err := queue.Open(c, build, queue.Options{})
	require.NoError(t, err)
	_, err = b.Join(ctx, "w1", queue.Manifest{UnitIDs: []string{"a", "b"}, Timeout: time.Minute}, queue.JoinOptions{})
	require.NoError(t, err)

	tr := NewTracker(c, build)
	for range 2 {
		r, ok, err := b.Reserve(ctx, "w1", queue.ReserveOptions{Block: time.Millisecond})
		require.NoError(t, err)
		require.True(t, ok)
		s, err := tr.Poll(ctx)
		require.NoError(t, err)
		assert.False(t, s.Complete())
		require.NoError(t, b.Finalize(ctx, r, queue.Result{Outcome: "passed"}))
	}
	done, err := tr.Poll(ctx)
	require.NoError(t, err)
	require.True(t, done.Complete())

	time.Sleep(1500 * time.Millisecond)
	later, err := tr.Poll(ctx)
	require.NoError(t, err)
	assert.Equal(t, done.Elapsed, later.Elapsed, "got %s a while after, want %s as when it completed", later.Elapsed, done.Elapsed)
	assert.Less(t, later.Elapsed, time.Second, "the build took a moment")
	assert.Greater(t, later.Now.Sub(done.Now), time.Second, "the server's clock went on")

	// A new tracker, that never saw the build running, says the same.
	fresh, err := NewTracker(c, build).Poll(ctx)
	require.NoError(t, err)
	assert.Equal(t, done.Elapsed, fresh.Elapsed)
}
