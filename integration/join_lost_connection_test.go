package integration

import (
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connection that breaks while the publish commit is in flight leaves its
// outcome unknown. Join finds out by looking, and publishes again with the
// lease it still holds when the commit did not land, instead of waiting for
// its own lease to expire (past the init timeout here: the build would never
// be published). Either way the build is published once, by this worker.
func TestJoinPublishWithLostConnection(t *testing.T) {
	for name, mode := range map[string]int32{"cut before EXEC": cutBeforeExec, "cut after EXEC": cutAfterExec} {
		t.Run(name, func(t *testing.T) {
			l := newLifecycle(t)
			proxy := newCutProxy(t, srv.Addr())
			b, err := queue.Open(proxy.client(t), l.id, queue.Options{TTL: ttlMS * time.Millisecond})
			require.NoError(t, err)
			proxy.armed.Store(mode)
			opts := fastJoin
			opts.InitTimeout, opts.LeaseTTL = 2*time.Second, time.Minute
			j, err := b.Join(l.ctx, "ci-1", manifestFor("x", "a", "b"), opts)
			require.NoError(t, err)
			require.EqualValues(t, 1, proxy.cuts.Load(), "the proxy cut one commit")
			assert.True(t, j.Published, "this worker published")
			assert.Equal(t, []string{"a", "b"}, j.Manifest.UnitIDs)
			n, err := l.do("XLEN", l.keys.Units).AsInt64()
			require.NoError(t, err)
			assert.EqualValues(t, 2, n, "units queued once")
		})
	}
}
