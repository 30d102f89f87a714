package integration

import (
	"bytes"
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
