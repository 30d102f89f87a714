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

// A joiner reads meta and the tombstone in one round trip, but not in one
// atomic step: another worker's publish, which writes both at once, may land
// between the two reads. Read in the wrong order, that is "no meta, a
// tombstone": the build's state gone, the build id burnt, and the joiner
// gives up on a build that was just published. The proxy below holds the
// second read back until the other worker has published.
func TestJoinWhilePublished(t *testing.T) {
	l := newLifecycle(t)
	m := manifestFor("x", "a", "b")
	var (
		armed     atomic.Bool
		publisher queue.Joined
		pubErr    error
		pubDone   = make(chan struct{}) // orders the proxy's writes before the test's reads
	)
	publish := func() {
		time.Sleep(100 * time.Millisecond) // Redis answers the first read
		publisher, pubErr = l.build.Join(l.ctx, "ci-1", m, fastJoin)
		close(pubDone)
	}
	proxy := newTCPProxy(t, srv.Addr(), func(down, up net.Conn) {
		go func() { _, _ = io.Copy(down, up); down.Close() }()
		go func() {
			defer up.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := down.Read(buf)
				if n > 0 {
					chunk := buf[:n]
					h := bytes.Index(chunk, []byte("HGETALL\r\n"))
					e := bytes.Index(chunk, []byte("EXISTS\r\n"))
					if h >= 0 && e >= 0 && armed.CompareAndSwap(true, false) {
						// Split before the second of the two reads.
						at := bytes.LastIndex(chunk[:max(h, e)], []byte("*2\r\n"))
						_, _ = up.Write(chunk[:at])
						publish()
						chunk = chunk[at:]
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
	})
	b, err := queue.Open(proxy.client(t), l.id, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	armed.Store(true)
	j, err := b.Join(l.ctx, "ci-2", m, fastJoin)
	require.False(t, armed.Load(), "the proxy split the joiner's first look")
	<-pubDone
	require.NoError(t, pubErr)
	require.True(t, publisher.Published)
	require.NoError(t, err, "the joiner joins the build published meanwhile")
	assert.False(t, j.Published)
	assert.Equal(t, publisher.ReadyAtMS, j.ReadyAtMS)
}
