package live

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/embedded"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// embeddedClient is a client of an embedded server of its own, both
// closed when t ends.
func embeddedClient(t *testing.T) rueidis.Client {
	t.Helper()
	srv, err := embedded.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestTracker(t *testing.T) {
	c := embeddedClient(t)
	ctx := context.Background()

	tr := NewTracker(c, "b1")
	_, err := tr.Poll(ctx)
	require.True(t, errors.Is(err, ErrNoBuild), "%v", err)

	b, err := queue.Open(c, "b1", queue.Options{})
	require.NoError(t, err)
	_, err = b.Join(ctx, "w1", queue.Manifest{UnitIDs: []string{"a", "b", "c", "d"}, Budgets: queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1}, Timeout: time.Minute}, queue.JoinOptions{})
	require.NoError(t, err)
	take := func(w string) queue.Reservation {
		r, ok, err := b.Reserve(ctx, w, queue.ReserveOptions{Block: time.Millisecond})
		require.NoError(t, err)
		require.True(t, ok)
		return r
	}
	ra := take("w1")
	require.NoError(t, b.Finalize(ctx, ra, queue.Result{Outcome: "passed"}))
	rb := take("w2")
	_, err = b.Requeue(ctx, rb, queue.Result{}, queue.Budgets{})
	require.NoError(t, err)
	rc := take("w1")
	require.Equal(t, "b", rc.UnitID, "requeued units first")
	take("w2") // c, running

	s, err := tr.Poll(ctx)
	require.NoError(t, err)
	assert.True(t, s.Published)
	assert.Equal(t, int64(4), s.Total)
	assert.Equal(t, int64(1), s.Finalized)
	assert.Equal(t, 1, s.Passed)
	assert.Equal(t, []UnitRetry{{UnitID: "b", RetryIndex: 1}}, s.Retrying)
	assert.Equal(t, 2, s.ActiveWorkers())
	assert.Equal(t, time.Minute, s.Timeout)
	assert.False(t, s.Complete())

	require.NoError(t, b.Finalize(ctx, rc, queue.Result{Outcome: "failed", Reason: "test_failure"}))
	s, err = tr.Poll(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.Finalized)
	assert.Equal(t, 1, s.Failed)
	assert.Empty(t, s.Retrying)
	assert.Equal(t, []UnitFailure{{UnitID: "b", Reason: "test_failure", WorkerID: "w1"}}, s.FailedUnits)
	eta, ok := s.ETA()
	assert.True(t, ok)
	assert.GreaterOrEqual(t, eta, time.Duration(0))

	var view strings.Builder
	require.NoError(t, WriteStatus(&view, s))
	out := view.String()
	assert.Contains(t, out, "build b1: running, 2 of 4 units finalized (50%)")
	assert.Contains(t, out, "passed 1, failed 1, flaky 0, retrying 0, reclaims 0, abandoned 0")
	assert.Contains(t, out, "failed: b (test_failure, worker w1)")
	assert.Regexp(t, `(?m)^w1\s+\S+ ago\s+-\s+2$`, out)
	assert.Regexp(t, `(?m)^w2\s+\S+ ago\s+c\s+1$`, out)
	assert.Contains(t, s.Line(), "[2/4] 50%  failed 1  busy 1/2")
	assert.True(t, strings.HasPrefix(s.Plain(), "progress: 2 of 4 units finalized (50%), 0 retrying, 1 failed, 1 of 2 workers busy, "), s.Plain())
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		400 * time.Millisecond: "0.4s", 12 * time.Second: "12s", 62 * time.Second: "1m02s",
		63 * time.Minute: "1h03m", -time.Second: "0.0s",
	} {
		assert.Equal(t, want, Duration(d))
	}
}
