package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A commit whose reply is lost is resolved by looking for its token in the
// worker's guard (queue/internal/txn, resolve.go). Here the worker commits faster
// than any count of tokens could keep up with: while the reply of one of
// its commits is held, another process acting under the same worker id
// (its heartbeat thread, a second process) commits a hundred more, past
// the 64 tokens the guard once kept. The resolution must still find the
// token, and the effects no fence would stop from repeating (a delivered,
// abandoned or prebuilt event, the count in the worker's record) happen
// once.
func TestLostReplyOutrunByAFastWorker(t *testing.T) {
	const burst = 100 // commits of the same worker id while the reply is held
	// lost runs do through a connection whose first commit loses its reply
	// while burst commits of w1 land, and returns do's error.
	lost := func(t *testing.T, e *env, do func(b *queue.Build) error) error {
		t.Helper()
		other, err := queue.OpenKeys(newEnv(t).client, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
		require.NoError(t, err)
		proxy := newHoldProxy(t, srv.Addr(), func() {
			for i := range burst {
				require.NoError(t, other.Liveness(e.ctx, "w1", ""), "liveness %d", i+1)
			}
		})
		b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
		require.NoError(t, err)
		proxy.armed.Store(true)
		err = do(b)
		require.EqualValues(t, 1, proxy.cuts.Load(), "the proxy cut one commit")
		return err
	}
	count := func(e *env, typ string) int {
		n := 0
		for _, ev := range e.events() {
			if ev["type"] == typ {
				n++
			}
		}
		return n
	}

	t.Run("delivery accounting", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		x, ok := e.reserve("w1")
		require.True(t, ok)
		require.NoError(t, lost(t, e, func(b *queue.Build) error {
			_, err := b.AccountDelivery(e.ctx, "w1", x.stream, x.id, x.unit)
			return err
		}))
		assert.Equal(t, 1, count(e, events.TypeDelivered), "one delivery accounted once")
	})
	t.Run("abandon", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		r := e.reservation("w1")
		require.NoError(t, lost(t, e, func(b *queue.Build) error { return b.Abandon(e.ctx, r, 5) }))
		assert.Equal(t, 1, count(e, events.TypeAbandoned), "one abandon recorded once")
	})
	t.Run("prebuilt event", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		ev := []byte(`{"type":"worker_error","worker_id":"w1","phase":"redis","message":"lost"}`)
		require.NoError(t, lost(t, e, func(b *queue.Build) error { return b.AppendPrebuilt(e.ctx, "w1", ev) }))
		assert.Equal(t, 1, count(e, "worker_error"), "one prebuilt event appended once")
	})
	t.Run("finalize", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		r := e.reservation("w1")
		err := lost(t, e, func(b *queue.Build) error {
			return b.Finalize(e.ctx, r, queue.Result{Outcome: events.OutcomePassed, DurationMS: 5})
		})
		assert.NoError(t, err, "the finalize was applied, once: its caller must hear so")
		assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"])
		assert.EqualValues(t, 1, e.worker("w1")["processed"], "the worker's record counts one unit")
	})
}

// Transition takes ttl_ms down to 1 ms, and every commit gives the build's
// keys that TTL. The worker's guard must outlive the resolution window all
// the same: here a liveness commit lands, its reply is lost, and by the
// time it is resolved every key of the build has expired, but the guard,
// with the commit's token, is still there (with a TTL of more than a
// minute), so the caller hears that its liveness was recorded. Were the
// guard to have expired with the rest, the resolution would take the
// commit as not applied and run it again, on a build now gone: CORRUPT.
func TestLostReplyWithAOneMillisecondTTL(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	guard := fence.WorkerKey(strings.TrimSuffix(e.keys.Meta, "meta"), "w1")
	var guardTTL int64
	proxy := newHoldProxy(t, srv.Addr(), func() {
		ms, err := e.do("PTTL", guard).AsInt64()
		require.NoError(t, err)
		guardTTL = ms
	})
	client := proxy.client(t)
	proxy.armed.Store(true)
	reply, err := queue.Transition(e.ctx, client, e.scriptKeys(), []string{queue.ModeLiveness, "w1", "1"})
	require.NoError(t, err)
	require.EqualValues(t, 1, proxy.cuts.Load(), "the proxy cut one commit")
	assert.Equal(t, []any{"OK"}, reply, "the liveness was applied, once")
	assert.Greater(t, guardTTL, int64(time.Minute/time.Millisecond),
		"right after the commit, the guard's TTL is the resolution window, not ttl_ms")
	n, err := e.do("EXISTS", e.keys.Meta).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the build's keys have their 1 ms TTL")
}
