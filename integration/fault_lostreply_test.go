package integration

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A commit whose reply is lost is resolved through the worker's guard key:
// the commit wrote its token there, so finding the token means "applied"
// (queue/internal/txn, resolve.go). Every transition of the same worker id writes
// that guard too, and another may commit after ours and before the
// resolution reads it (the heartbeat and liveness of a second process acting
// as the same worker, as TestWorkerRecordNoLostUpdate runs; any caller of
// the typed API or of Transition that heartbeats from another thread). Were
// the guard to hold only the last token, the resolution would read the other
// one and conclude "not applied" although ours was applied, and run the
// transition again:
//   - a finalize (or requeue, abandon) would find its entry settled and
//     return ErrStale: the caller told nothing was written, a stale_rejected
//     event recorded and a result that counted discarded;
//   - a delivery accounting, fenced by owner only, would be applied a second
//     time: two delivered events for one delivery.
//
// The guard keeps the worker's recent commit tokens, and these tests hold
// it to that. The proxy below lets the commit reach Redis, holds its reply,
// commits a liveness of the same worker from another client, then cuts the
// connection.
func TestFaultLostReplyWithAnotherTransitionOfTheSameWorker(t *testing.T) {
	t.Run("finalize", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		r := e.reservation("w1")
		other := newEnv(t) // another process acting as w1
		otherBuild, err := queue.OpenKeys(other.client, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
		require.NoError(t, err)

		proxy := newHoldProxy(t, srv.Addr(), func() {
			require.NoError(t, otherBuild.Liveness(e.ctx, "w1", "u1"))
		})
		b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
		require.NoError(t, err)
		proxy.armed.Store(true)
		err = b.Finalize(e.ctx, r, queue.Result{Outcome: events.OutcomePassed, DurationMS: 5})
		require.EqualValues(t, 1, proxy.cuts.Load(), "the proxy cut one commit")

		assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"], "the finalize was applied")
		assert.NoError(t, err, "the finalize was applied, once: its caller must hear so")
	})
	t.Run("delivery accounting", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		x, ok := e.reserve("w1")
		require.True(t, ok)
		other := newEnv(t)
		otherBuild, err := queue.OpenKeys(other.client, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
		require.NoError(t, err)

		proxy := newHoldProxy(t, srv.Addr(), func() {
			require.NoError(t, otherBuild.Liveness(e.ctx, "w1", ""))
		})
		b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
		require.NoError(t, err)
		proxy.armed.Store(true)
		_, err = b.AccountDelivery(e.ctx, "w1", x.stream, x.id, x.unit)
		require.NoError(t, err)
		require.EqualValues(t, 1, proxy.cuts.Load(), "the proxy cut one commit")

		delivered := 0
		for _, ev := range e.events() {
			if ev["type"] == events.TypeDelivered {
				delivered++
			}
		}
		assert.Equal(t, 1, delivered, "one delivery accounted once")
	})
}

// holdProxy forwards connections to Redis. Armed, it lets the first commit
// (the chunk holding EXEC) through, drops Redis's reply to it, runs hook
// while the client still waits, then cuts the connection: a commit applied
// whose reply is lost, with something happening in between.
type holdProxy struct {
	*tcpProxy
	hook  func()
	armed atomic.Bool
	cuts  atomic.Int32
}

func newHoldProxy(t testing.TB, target string, hook func()) *holdProxy {
	t.Helper()
	p := &holdProxy{hook: hook}
	p.tcpProxy = newTCPProxy(t, target, p.pipe)
	return p
}

func (p *holdProxy) pipe(down, up net.Conn) {
	var held atomic.Bool
	go func() { // replies: dropped once the commit is held
		buf := make([]byte, 64<<10)
		for {
			n, err := up.Read(buf)
			if n > 0 && !held.Load() {
				if _, werr := down.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				down.Close()
				return
			}
		}
	}()
	go func() { // requests
		defer up.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := down.Read(buf)
			if n > 0 {
				chunk := buf[:n]
				// The client sends nothing else on this connection until
				// the commit's replies come: the reply goroutine is idle.
				if bytes.Contains(chunk, []byte("EXEC\r\n")) && p.armed.CompareAndSwap(true, false) {
					held.Store(true)
					_, _ = up.Write(chunk)
					time.Sleep(50 * time.Millisecond) // Redis runs the commit
					p.hook()
					p.cuts.Add(1)
					down.Close()
					return
				}
				if _, werr := up.Write(chunk); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
}
