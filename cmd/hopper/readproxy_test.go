package main

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// readProxy forwards every connection to Redis and, armed, holds one read
// of the client's in flight: the first chunk holding want sent after one
// holding after (a pipelined read arrives in one write from rueidis). held
// is told then, and the chunk goes on once release is; the test does what
// must land between the two reads meanwhile.
type readProxy struct {
	ln            net.Listener
	after, want   []byte
	state         atomic.Int32 // 0 off, 1 armed, 2 after seen
	held, release chan struct{}
}

func newReadProxy(t testing.TB, target, after, want string) *readProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &readProxy{ln: ln, after: []byte(after), want: []byte(want), held: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				down.Close()
				continue
			}
			t.Cleanup(func() { down.Close(); up.Close() })
			go func() { _, _ = io.Copy(down, up); down.Close() }()
			go p.forward(down, up)
		}
	}()
	return p
}

func (p *readProxy) addr() string { return p.ln.Addr().String() }

func (p *readProxy) arm() { p.state.Store(1) }

func (p *readProxy) forward(down, up net.Conn) {
	defer up.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := down.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if bytes.Contains(chunk, p.after) {
				p.state.CompareAndSwap(1, 2)
			} else if bytes.Contains(chunk, p.want) && p.state.CompareAndSwap(2, 0) {
				close(p.held)
				<-p.release
			}
			if _, werr := up.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
