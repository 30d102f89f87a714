package integration

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
)

// Meta deleted between a finalize's reads and its commit: meta is read, not
// watched (every finalize writes it), so the commit lands and its count
// re-creates meta, holding that field alone. What follows must still find
// the build's state gone: every transition CORRUPT, Status and the report's
// reading of meta corrupt.
func TestMetaLostUnderACommit(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, nil)
	proxy := newExecProxy(t, 300*time.Millisecond)
	b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	first, second := e.reservation("w1"), e.reservation("w2")

	proxy.armed.Store(1)
	var wg sync.WaitGroup
	var ferr error
	wg.Go(func() { ferr = b.Finalize(e.ctx, first, queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}) })
	<-proxy.held // the commit is on its way, its reads made
	require.NoError(t, e.do("DEL", e.keys.Meta).Error())
	wg.Wait()
	require.NoError(t, ferr, "the commit watched nothing that changed")

	fields, err := e.do("HGETALL", e.keys.Meta).AsStrMap()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"finalized_count": "1"}, fields, "meta as the commit left it")

	pass := queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}
	e.requireNothingWritten(func() {
		assert.ErrorIs(t, b.Heartbeat(e.ctx, second), queue.ErrCorrupt, "heartbeat")
		assert.ErrorIs(t, b.Finalize(e.ctx, second, pass), queue.ErrCorrupt, "finalize")
		assert.ErrorIs(t, b.Liveness(e.ctx, "w2", second.UnitID), queue.ErrCorrupt, "liveness")
		_, err := b.Reclaim(e.ctx, "w3", 0, 3)
		assert.ErrorIs(t, err, queue.ErrCorrupt, "reclaim")
	})
	_, err = b.Status(e.ctx)
	assert.ErrorIs(t, err, queue.ErrCorrupt, "Status")
	_, err = report.ParseMeta(fields)
	assert.ErrorIs(t, err, report.ErrCorrupt, "the report's reading of meta")
}
