package integration

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// silenceProxy forwards a client's connections to Redis until it is armed;
// then the next EXEC reaches Redis and nothing ever comes back: no reply, on
// any connection, old or new. A paused Redis, met mid-commit.
type silenceProxy struct {
	*tcpProxy
	armed, silent atomic.Bool
}

func newSilenceProxy(t testing.TB, target string) *silenceProxy {
	t.Helper()
	p := &silenceProxy{}
	p.tcpProxy = newTCPProxy(t, target, func(down, up net.Conn) {
		go p.copy(down, up, false)
		go p.copy(up, down, true)
	})
	return p
}

// copy moves bytes from src to dst until silent; requests (toRedis) are
// watched for the EXEC that silences everything.
func (p *silenceProxy) copy(dst, src net.Conn, toRedis bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if forward := !p.silent.Load(); n > 0 && forward {
			chunk := buf[:n]
			if toRedis && p.armed.Load() && bytes.Contains(chunk, []byte("EXEC\r\n")) {
				p.silent.Store(true) // this EXEC reaches Redis; nothing comes back
			}
			if _, werr := dst.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// An idle worker whose liveness commit loses its reply to a Redis that then
// stays silent exits 2 within about its Timeout, as docs/cli.md#exit-codes says of
// an unreachable Redis: learning the lost commit's outcome (queue's
// ResolveWait) is bounded by the worker's Timeout, not by the library's
// default of 10 s.
func TestIdleWorkerExitsWhenACommitIsLostToSilence(t *testing.T) {
	f := newFleet(t, "u1")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	running := make(chan struct{})
	busy := f.start(ctx, f.config("busy"), func(ctx context.Context, r queue.Reservation) worker.Result {
		close(running)
		<-ctx.Done()
		return worker.Result{Outcome: worker.Passed}
	})
	select {
	case <-running:
	case err := <-busy:
		t.Fatalf("the busy worker ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the busy worker never started its unit")
	}

	proxy := newSilenceProxy(t, srv.Addr())
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{proxy.addr()}, DisableCache: true, ConnWriteTimeout: time.Second,
		Dialer: net.Dialer{Timeout: time.Second},
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	cfg := f.config("idle")
	idle := make(chan error, 1)
	go func() {
		idle <- worker.Run(ctx, client, f.suite, cfg, func(context.Context, queue.Reservation) worker.Result {
			return worker.Result{Outcome: worker.Passed}
		})
	}()
	require.Eventually(t, func() bool {
		n, err := f.do("HEXISTS", f.keys.Workers, "idle").AsInt64()
		return err == nil && n == 1
	}, 20*time.Second, 20*time.Millisecond, "the idle worker records its liveness")
	time.Sleep(300 * time.Millisecond) // reserving nothing, again and again

	proxy.armed.Store(true)
	armed := time.Now()
	select {
	case err := <-idle:
		took := time.Since(armed)
		t.Logf("the idle worker exited %v after the commit was lost (Timeout %v)", took.Round(time.Millisecond), cfg.Timeout)
		assert.True(t, proxy.silent.Load(), "a commit met the silence")
		assert.Equal(t, worker.ExitInfrastructure, worker.ExitCode(err), "%v", err)
		assert.Less(t, took, queue.DefaultResolveWait-2*time.Second, "bounded by the worker's Timeout, not the default ResolveWait")
	case <-time.After(30 * time.Second):
		t.Fatal("the idle worker still runs 30 s into the silence")
	}
}
