package integration

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// commitGate is a proxy that holds a client's commit at the door: armed, the first write
// that carries an EXEC waits, unsent, until the test opens the gate. The
// transaction has made every read it decides on and armed its WATCH; what
// other clients do meanwhile lands between its reads and its commit.
type commitGate struct {
	*tcpProxy
	armed   atomic.Bool
	held    chan struct{} // a commit is waiting at the gate
	release chan struct{} // closed: the gate is open
	once    sync.Once
}

func newCommitGate(t testing.TB) *commitGate {
	t.Helper()
	p := &commitGate{held: make(chan struct{}, 1), release: make(chan struct{})}
	p.tcpProxy = newTCPProxy(t, srv.Addr(), func(down, up net.Conn) {
		go func() { _, _ = io.Copy(down, up); down.Close() }()
		go copyChunks(down, up, p.hold)
	})
	t.Cleanup(p.open) // never leave a connection waiting
	return p
}

// hold holds the first chunk that carries an EXEC, once armed, until the
// gate opens. A commit arrives in one write from rueidis.
func (p *commitGate) hold(chunk []byte) {
	if bytes.Contains(chunk, []byte("EXEC\r\n")) && p.armed.CompareAndSwap(true, false) {
		p.held <- struct{}{}
		<-p.release
	}
}

// open lets the held commit, and every later one, through.
func (p *commitGate) open() { p.once.Do(func() { close(p.release) }) }

// waitHeld waits for a commit at the gate, or for done (the transaction
// ended without committing); it reports whether a commit is held.
func (p *commitGate) waitHeld(t testing.TB, done <-chan struct{}) bool {
	t.Helper()
	select {
	case <-p.held:
		return true
	case <-done:
		return false
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the transaction neither reached its commit nor ended")
	}
	return false
}
