package live

import (
	"context"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Tracker that followed round 1 and sees a retry round open shows the
// new round from its own first event: round 1's failures and finalized
// units are not counted in it.
func TestTrackerFollowsARoundOpening(t *testing.T) {
	c := embeddedClient(t)
	ctx := context.Background()
	b, err := queue.Open(c, "b1", queue.Options{})
	require.NoError(t, err)
	_, err = b.Join(ctx, "w1", queue.Manifest{UnitIDs: []string{"a", "b", "c"}}, queue.JoinOptions{})
	require.NoError(t, err)
	settle := func(b *queue.Build, w string, outcome string) {
		r, ok, err := b.Reserve(ctx, w, queue.ReserveOptions{Block: time.Millisecond})
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, b.Finalize(ctx, r, queue.Result{Outcome: outcome, Reason: events.ReasonTestFailure}))
	}
	settle(b, "w1", events.OutcomePassed)
	settle(b, "w1", events.OutcomeFailed)
	settle(b, "w1", events.OutcomeFailed)

	tr := NewTracker(c, "b1")
	s, err := tr.Poll(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, s.Round)
	assert.Equal(t, [2]int{1, 2}, [2]int{s.Passed, s.Failed})
	assert.True(t, s.Complete())

	_, err = b.EnterRound(ctx, "w2", queue.RetrySignal{Force: true})
	require.NoError(t, err)
	rb, err := b.Round(2)
	require.NoError(t, err)
	settle(rb, "w2", events.OutcomeFailed)
	s, err = tr.Poll(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, s.Round)
	assert.Equal(t, [2]int64{1, 2}, [2]int64{s.Finalized, s.Total})
	assert.Equal(t, [2]int{0, 1}, [2]int{s.Passed, s.Failed}, "round 2's unit alone")
	require.Len(t, s.FailedUnits, 1)
	assert.Equal(t, "w2", s.FailedUnits[0].WorkerID)
	assert.False(t, s.Complete())
	require.Len(t, s.Workers, 1)
	assert.Equal(t, "w2", s.Workers[0].ID, "the round's workers")
}
