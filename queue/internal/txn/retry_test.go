package txn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Package queue's defaults (Options).
const (
	DefaultMaxAttempts  = 100
	DefaultBackoffFloor = 100 * time.Microsecond
	DefaultBackoffCeil  = 20 * time.Millisecond
	DefaultResolveWait  = 10 * time.Second
	DefaultClusterWait  = 30 * time.Second
)

// errFinal is a decision of an attempt, which ends the transition.
var errFinal = errors.New("stale")

// testRetrier is the retrier of p, zero fields taken as the defaults.
func testRetrier(t *testing.T, p Policy) *retrier {
	t.Helper()
	d := Policy{MaxAttempts: DefaultMaxAttempts, BackoffFloor: DefaultBackoffFloor, BackoffCeil: DefaultBackoffCeil,
		ClusterWait: DefaultClusterWait, ResolveWait: DefaultResolveWait}
	if p.MaxAttempts != 0 {
		d.MaxAttempts = p.MaxAttempts
	}
	if p.ClusterWait != 0 {
		d.ClusterWait = p.ClusterWait
	}
	if p.ResolveWait != 0 {
		d.ResolveWait = p.ResolveWait
	}
	return newRetrier(d)
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, retryContended, classify(ctx, ErrAborted))
	assert.Equal(t, retryContended, classify(ctx, fmt.Errorf("commit: %w", ErrAborted)))
	assert.Equal(t, retryReread, classify(ctx, ErrRetry))
	assert.Equal(t, retryConn, classify(ctx, io.EOF))
	assert.Equal(t, retryNone, classify(ctx, nil))
	assert.Equal(t, retryNone, classify(ctx, errFinal))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.Equal(t, retryNone, classify(cancelled, io.EOF), "a connection error of a caller that gave up is final")
}

// The cluster's replies are ridden out for ClusterWait, however many tries
// that takes, and do not count toward MaxAttempts.
func TestRetrierRidesOutTheClusterForClusterWait(t *testing.T) {
	r := testRetrier(t, Policy{})
	ask := errors.New("ASK 1234 127.0.0.1:7001")
	t0 := time.Unix(1000, 0)
	tries, now := 0, t0
	for ; tries < 10*DefaultMaxAttempts; tries++ {
		wait, err := r.next(retryCluster, ask, now)
		if err != nil {
			assert.ErrorIs(t, err, ask, "the last reply is returned")
			assert.NotErrorIs(t, err, ErrContention)
			assert.Contains(t, err.Error(), "ClusterWait 30s")
			break
		}
		assert.LessOrEqual(t, wait, clusterBackoffCeil)
		now = now.Add(wait + time.Millisecond)
	}
	assert.GreaterOrEqual(t, now.Sub(t0), DefaultClusterWait, "the wait lasts ClusterWait")
	assert.Less(t, now.Sub(t0), DefaultClusterWait+time.Second)
	assert.Greater(t, tries, DefaultMaxAttempts, "far more tries than MaxAttempts")
	assert.Less(t, tries, 2000, "the backoff grows to its ceiling")

	// Contention keeps its own bound, untouched by the cluster's tries.
	for i := 1; i < DefaultMaxAttempts; i++ {
		wait, err := r.next(retryContended, ErrAborted, now)
		require.NoError(t, err, "abort %d", i)
		assert.LessOrEqual(t, wait, DefaultBackoffCeil)
	}
	_, err := r.next(retryContended, ErrAborted, now)
	assert.ErrorIs(t, err, ErrContention)
	assert.Contains(t, err.Error(), fmt.Sprintf("after %d attempts", DefaultMaxAttempts))
}

func TestRetrierBounds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := testRetrier(t, Policy{MaxAttempts: 3, ClusterWait: time.Second, ResolveWait: 2 * time.Second})
	_, err := r.next(retryReread, ErrRetry, t0)
	require.NoError(t, err)
	wait, err := r.next(retryContended, ErrAborted, t0)
	require.NoError(t, err)
	assert.Less(t, wait, DefaultBackoffFloor, "the first wait is the floor, jittered")
	_, err = r.next(retryReread, ErrRetry, t0)
	assert.ErrorIs(t, err, ErrContention, "rereads and aborts share MaxAttempts")

	r = testRetrier(t, Policy{ClusterWait: time.Second, ResolveWait: 2 * time.Second})
	_, err = r.next(retryCluster, errors.New("TRYAGAIN"), t0)
	require.NoError(t, err)
	_, err = r.next(retryConn, io.EOF, t0.Add(500*time.Millisecond))
	require.NoError(t, err)
	_, err = r.next(retryCluster, errors.New("CLUSTERDOWN"), t0.Add(999*time.Millisecond))
	require.NoError(t, err)
	_, err = r.next(retryCluster, errors.New("CLUSTERDOWN"), t0.Add(time.Second))
	assert.ErrorContains(t, err, "CLUSTERDOWN", "ClusterWait counts from the first cluster reply")
	_, err = r.next(retryConn, io.EOF, t0.Add(2*time.Second))
	require.NoError(t, err, "the connection's bound counts from its own first failure")
	_, err = r.next(retryConn, io.EOF, t0.Add(2500*time.Millisecond))
	assert.ErrorIs(t, err, io.EOF)
}
