package integration

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

// tcpProxy forwards each connection a client makes to a Redis, through
// pipe, which moves the bytes of one connection pair: the fault proxies
// below differ only in their pipe. Cleanup closes everything.
type tcpProxy struct {
	ln     net.Listener
	target string
	pipe   func(down, up net.Conn)
	mu     sync.Mutex
	conns  []net.Conn
}

func newTCPProxy(t testing.TB, target string, pipe func(down, up net.Conn)) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{ln: ln, target: target, pipe: pipe}
	go p.serve()
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) client(t testing.TB) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.addr()}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func (p *tcpProxy) serve() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		p.pipe(down, up)
	}
}

// cut closes the listener and every connection: the server is gone.
func (p *tcpProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// copyChunks copies what the client writes to Redis, read by read, showing
// each read to each before it goes on, until either side closes.
func copyChunks(down, up net.Conn, each func(chunk []byte)) {
	defer up.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := down.Read(buf)
		if n > 0 {
			each(buf[:n])
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cutProxy sits between a client and Redis and, when armed, cuts the
// connection that sends an EXEC: either just before the EXEC reaches Redis
// (the commit never happens) or just after (it happens, but its reply is
// lost). Either way the client sees a broken connection mid-commit.
type cutProxy struct {
	*tcpProxy
	armed atomic.Int32 // 0 off, 1 cut before EXEC, 2 cut after EXEC
	cuts  atomic.Int32
}

const (
	cutBeforeExec = 1
	cutAfterExec  = 2
)

func newCutProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	p := &cutProxy{}
	p.tcpProxy = newTCPProxy(t, target, func(down, up net.Conn) {
		go func() { _, _ = io.Copy(down, up); down.Close() }()
		go p.forward(down, up)
	})
	return p
}

// forward copies client bytes to Redis, watching for an EXEC to cut at. A
// pipelined commit arrives in one write from rueidis, so looking inside each
// read is enough for this test's traffic.
func (p *cutProxy) forward(down, up net.Conn) {
	defer up.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := down.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			mode := p.armed.Load()
			if i := bytes.Index(chunk, []byte("EXEC\r\n")); i >= 0 && mode != 0 && p.armed.CompareAndSwap(mode, 0) {
				p.cuts.Add(1)
				if mode == cutAfterExec {
					_, _ = up.Write(chunk)
				} else {
					// Everything before EXEC goes through: Redis is left
					// with an open MULTI on a connection about to die.
					start := bytes.LastIndex(chunk[:i], []byte("*1\r\n"))
					if start > 0 {
						_, _ = up.Write(chunk[:start])
					}
				}
				down.Close()
				up.Close()
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
}
