package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/queue"
)

// A caller who gives up between a transition's reads and its commit gets its
// context's error, and nothing is sent: there is no lost reply to resolve,
// so not even the worker's guard is written. (The reads run on a connection
// with the call's deadline, which does not watch for a cancellation; the
// proxy holds them while the caller cancels.)
func TestCancelledBetweenReadsAndCommit(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	proxy := newExecProxy(t, 300*time.Millisecond)
	proxy.match = []byte("WATCH\r\n")
	b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)

	e.requireNothingWritten(func() {
		ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
		defer cancel()
		proxy.armed.Store(1)
		var lerr error
		var wg sync.WaitGroup
		wg.Go(func() { lerr = b.Liveness(ctx, "w1", "u1") })
		<-proxy.held
		cancel()
		wg.Wait()
		require.ErrorIs(t, lerr, context.Canceled)
	})
	require.NoError(t, b.Liveness(e.ctx, "w1", "u1"), "the pool's connections still commit")
	require.Equal(t, "u1", e.worker("w1")["current_unit"])
}
