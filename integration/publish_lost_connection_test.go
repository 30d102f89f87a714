package integration

import (
	"bytes"
	"io"
	"net"
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
		go func() { _, _ = io.Copy(down, up); down.Close() }()
		go func() {
			defer up.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := down.Read(buf)
				if n > 0 {
					_, _ = up.Write(buf[:n])
					if bytes.Contains(buf[:n], []byte("EXEC\r\n")) {
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
	assert.Contains(t, err.Error(), "reading meta of "+l.keys.Meta, "the failed look is named")
	assert.Equal(t, "ready", l.hash(l.keys.Meta)["state"], "the commit applied")
}
