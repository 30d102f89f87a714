package integration

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Redis that does not answer: worker.Run and report.Run end quickly (in
// seconds, not after the 300 s init timeout), with an error that says what failed and
// where (worker: exit 2; report: verdict unreachable, exit 2), and nothing
// is written (docs/cli.md#exit-codes: "Redis unreachable: exit 2"). Two
// ways of not answering: the address refuses connections (the server is
// gone), or it takes them and never replies (a frozen server, a
// black-holed network). The client was made while Redis still answered:
// making one on a dead address fails in rueidis.NewClient, before any
// hopper code runs. Each call runs under a deadline of its own, so that a
// hang shows as a failure instead of a stuck test.
//
// Both with a client on rueidis's defaults (as cmd/hopper makes them) and
// with DisableRetry: rueidis retries read-only commands after a network
// error, with backoff, until the caller's context ends, so a read without a
// deadline of its own would wait for as long as Redis stays away, forever
// under the deadline-free context a command gives it. Every read of a poll
// or a check in queue (Status, Progress, Reserve's reads) and report (its
// reader) carries its own deadline, so that retries end and the error comes
// back.
func TestBadInputRedisDoesNotAnswer(t *testing.T) {
	defer logBadInputs(t)
	const clientTimeout = time.Second
	pass := func(context.Context, queue.Reservation) worker.Result { return worker.Result{Outcome: worker.Passed} }
	for _, client := range []string{"rueidis defaults", "DisableRetry"} {
		for _, mode := range []string{"refuses", "silent"} {
			t.Run(client+"/"+mode, func(t *testing.T) {
				l := newLifecycle(t)
				p := newGateProxy(t, srv.Addr())
				opt := rueidis.ClientOption{InitAddress: []string{p.addr()}, DisableCache: true, ConnWriteTimeout: clientTimeout}
				opt.DisableRetry = client == "DisableRetry"
				c, err := rueidis.NewClient(opt)
				require.NoError(t, err)
				t.Cleanup(c.Close)
				before := l.snapshot()
				if mode == "refuses" {
					p.refuse()
				} else {
					p.silence()
				}
				bounded := func() (context.Context, context.CancelFunc) {
					return context.WithTimeout(l.ctx, 8*clientTimeout)
				}

				badInputs.Add(1)
				ctx, cancel := bounded()
				start := time.Now()
				err = worker.Run(ctx, c, worker.Suite{Units: []string{"a"}}, worker.Config{BuildID: l.id, WorkerID: "w1", Log: io.Discard}, pass)
				took := time.Since(start)
				cancel()
				require.Error(t, err)
				t.Logf("worker.Run after %v: %v", took.Round(time.Millisecond), err)
				if assert.Less(t, took, 6*clientTimeout, "worker.Run gives up in seconds") {
					assert.Equal(t, worker.ExitInfrastructure, worker.ExitCode(err))
					assert.Contains(t, err.Error(), "worker w1: ")
					assert.Contains(t, err.Error(), "meta of hopper:{"+l.id+"}:meta", "says what it could not read")
					assert.Regexp(t, "i/o timeout|connection refused|EOF|deadline exceeded", err.Error(), "says why")
				}

				badInputs.Add(1)
				ctx, cancel = bounded()
				start = time.Now()
				r, err := report.Run(ctx, c, l.id, report.Options{})
				took = time.Since(start)
				cancel()
				if err != nil {
					t.Errorf("report.Run after %v: %v, want verdict unreachable", took.Round(time.Millisecond), err)
				} else {
					t.Logf("report.Run after %v: %s: %s", took.Round(time.Millisecond), r.Verdict, r.Headline)
					assert.Less(t, took, 6*clientTimeout, "report.Run gives up in seconds")
					assert.Equal(t, report.VerdictUnreachable, r.Verdict)
					assert.Equal(t, report.ExitInfrastructure, r.ExitCode)
					assert.ErrorIs(t, r.Err, report.ErrUnreachable)
					assert.Contains(t, r.Headline, "redis unreachable: ")
				}
				assert.Equal(t, before, l.snapshot(), "nothing written")
			})
		}
	}
}

// A burnt build id (published once: its tombstone lives, its state is
// gone) is refused by the worker with ErrBuildBurnt and exit 2, telling the
// user to choose a new id, and nothing is written: no key reappears. The
// report calls it expired (exit 3). (Join itself:
// TestJoinRefusesBurntBuild.)
func TestBadInputBurntBuildID(t *testing.T) {
	defer logBadInputs(t)
	pass := func(context.Context, queue.Reservation) worker.Result { return worker.Result{Outcome: worker.Passed} }
	for name, burn := range map[string]func(l *lifecycle){
		"tombstone only": func(l *lifecycle) {
			require.NoError(t, l.do("SET", l.keys.Exists, "1", "PX", "600000").Error())
		},
		"state expired after a build ran": func(l *lifecycle) {
			f := &fleet{lifecycle: l, suite: worker.Suite{Units: []string{"a", "b"}, UnitType: "package", Command: "go test {unit}"}}
			for _, err := range f.run(f.workers(1, nil), passWith) {
				require.NoError(t, err)
			}
			for _, k := range []string{l.keys.Units, l.keys.Priority, l.keys.Meta, l.keys.UnitState, l.keys.Workers, l.keys.Leader} {
				require.NoError(t, l.do("DEL", k).Error())
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := newLifecycle(t)
			burn(l)
			l.requireUnchanged(func() {
				badInputs.Add(1)
				err := worker.Run(l.ctx, l.client, worker.Suite{Units: []string{"a", "b"}, UnitType: "package", Command: "go test {unit}"},
					worker.Config{BuildID: l.id, WorkerID: "w2", Log: io.Discard, InitTimeout: 5 * time.Second}, pass)
				require.ErrorIs(t, err, queue.ErrBuildBurnt)
				assert.Equal(t, worker.ExitInfrastructure, worker.ExitCode(err))
				assert.Contains(t, err.Error(), "build "+l.id+" was published before and its state is gone")
				assert.Contains(t, err.Error(), "choose a new build id")

				badInputs.Add(1)
				r, err := report.Run(l.ctx, l.client, l.id, report.Options{InitTimeout: time.Second})
				require.NoError(t, err)
				assert.Equal(t, report.VerdictExpired, r.Verdict, r.Headline)
				assert.Equal(t, report.ExitIncomplete, r.ExitCode)
			})
			assert.False(t, l.exists(l.keys.Meta), "meta re-created")
		})
	}
}

// gateProxy forwards connections to Redis until told to refuse them (its
// listener and every connection closed) or to go silent (connections
// accepted and kept open, nothing forwarded either way).
type gateProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	quiet  bool
}

func newGateProxy(t testing.TB, target string) *gateProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &gateProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.refuse)
	return p
}

func (p *gateProxy) addr() string { return p.ln.Addr().String() }

func (p *gateProxy) serve() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		quiet := p.quiet
		p.conns = append(p.conns, down)
		p.mu.Unlock()
		if quiet {
			continue // held open, never answered
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, up)
		p.mu.Unlock()
		go p.pipe(up, down)
		go p.pipe(down, up)
	}
}

// pipe copies src to dst until silenced, then swallows what comes.
func (p *gateProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		quiet := p.quiet
		p.mu.Unlock()
		if n > 0 && !quiet {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !quiet && !errors.Is(err, net.ErrClosed) {
				dst.Close()
			}
			return
		}
	}
}

func (p *gateProxy) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quiet = true
}

func (p *gateProxy) refuse() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
