package integration

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Publish's commit reaches Redis, and then the server is gone for the
// client: its reply is lost, and so is the look at the build that would
// tell whether it applied. The error says both, so that whoever reads it
// knows why the outcome is unknown.
func TestPublishOutcomeUnknownSaysWhy(t *testing.T) {
	l := newLifecycle(t)
	var proxy *tcpProxy
	proxy = newTCPProxy(t, srv.Addr(), func(down, up net.Conn) {
		var lost atomic.Bool // replies from here on never reach the client
		go func() {
			defer down.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := up.Read(buf)
				if n > 0 && !lost.Load() {
					if _, werr := down.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() {
			defer up.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := down.Read(buf)
				if n > 0 {
					exec := bytes.Contains(buf[:n], []byte("EXEC\r\n"))
					if exec {
						lost.Store(true)
					}
					_, _ = up.Write(buf[:n])
					if exec {
						proxy.cut() // the commit went through; nothing else will
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	})
	b, err := queue.Open(proxy.client(t), l.id, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	lease, won, err := b.TryLease(l.ctx, "ci-1", 0)
	require.NoError(t, err)
	require.True(t, won)

	err = b.Publish(l.ctx, lease, manifestOf("a", "b"), 0)
	require.ErrorIs(t, err, queue.ErrOutcomeUnknown)
	assert.Contains(t, err.Error(), "(then queue: reading ", "the failed look is named")
	assert.Equal(t, "ready", l.hash(l.keys.Meta)["state"], "the commit applied")
}

// Publish's commit is lost on the way, and meanwhile its lease expires and
// another worker publishes the build. Publish cannot hear its own reply,
// but the look that follows can tell: the build is another publisher's, so
// this commit was not applied and never will be (its WATCH saw meta move).
// That is ErrAlreadyPublished, not an unknown outcome.
func TestPublishLostCommitAndAnotherPublisher(t *testing.T) {
	l := newLifecycle(t)
	var armed atomic.Bool
	var other queue.Joined
	var otherErr error
	otherDone := make(chan struct{}) // orders the proxy's writes before the test's reads
	proxy := newTCPProxy(t, srv.Addr(), func(down, up net.Conn) {
		go func() { _, _ = io.Copy(down, up); down.Close() }()
		go func() {
			defer up.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := down.Read(buf)
				if n > 0 {
					if bytes.Contains(buf[:n], []byte("EXEC\r\n")) && armed.CompareAndSwap(true, false) {
						// The commit never reaches Redis; by the time the
						// client hears of it, the build is another's.
						time.Sleep(400 * time.Millisecond) // the lease expires
						other, otherErr = l.open().Join(l.ctx, "ci-2", manifestFor("x", "a", "b"), fastJoin)
						close(otherDone)
						down.Close()
						return
					}
					if _, werr := up.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	})
	b, err := queue.Open(proxy.client(t), l.id, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	lease, won, err := b.TryLease(l.ctx, "ci-1", 200*time.Millisecond)
	require.NoError(t, err)
	require.True(t, won)
	armed.Store(true)
	err = b.Publish(l.ctx, lease, manifestFor("x", "a", "b"), 0)
	require.False(t, armed.Load(), "the proxy dropped the commit")
	<-otherDone
	require.NoError(t, otherErr)
	require.True(t, other.Published, "the other worker published")
	require.ErrorIs(t, err, queue.ErrAlreadyPublished)
	assert.NotErrorIs(t, err, queue.ErrOutcomeUnknown)
	assert.Equal(t, other.ReadyAtMS, func() int64 {
		s, err := l.build.Status(l.ctx)
		require.NoError(t, err)
		return s.ReadyAtMS
	}())
}
