package integration

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chainFixture holds every lane of a Build (four first round trips held up
// by the proxy), queues four more heartbeats of other workers behind them,
// and runs them all, each on its own worker, through a client that counts
// round trips. It returns the errors of the eight and the round trips
// they took.
func chainFixture(t *testing.T, e *env, proxy *execProxy, held []queue.Reservation) ([]error, int64) {
	t.Helper()
	n, log := &atomic.Int64{}, &commandLog{}
	b, err := queue.OpenKeys(roundTripClient{Client: proxy.client(t), n: n, log: log}, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	proxy.armed.Store(4)
	errs := make([]error, len(held))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { errs[i] = b.Heartbeat(e.ctx, held[i]) })
	}
	for range 4 {
		<-proxy.held
	}
	for i := 4; i < len(held); i++ {
		wg.Go(func() { errs[i] = b.Heartbeat(e.ctx, held[i]) })
		time.Sleep(5 * time.Millisecond) // queued behind the lanes
	}
	wg.Wait()
	// A connection kept for a worker's next transition and given back
	// unused (queue/internal/engine/kept_reads.go) costs an UNWATCH of its own, sent off
	// the transitions' path when its timer fires (a second on): waited
	// for, and not counted.
	time.Sleep(1500 * time.Millisecond)
	return errs, n.Load() - int64(log.countName("UNWATCH"))
}

func chainEnv(t *testing.T) (*env, *execProxy, []queue.Reservation) {
	e := newEnv(t)
	units := make([]string, 8)
	for i := range units {
		units[i] = fmt.Sprintf("u%02d", i)
	}
	e.publish(units, nil)
	held := make([]queue.Reservation, len(units))
	for i := range held {
		held[i] = e.reservation(fmt.Sprintf("w%02d", i))
	}
	proxy := newExecProxy(t, 300*time.Millisecond)
	proxy.match = []byte("WATCH\r\n") // the first round trips, before any connection
	return e, proxy, held
}

// The transitions queued while every lane is busy send their first round
// trip behind the EXEC of the first lane to commit, on its connection
// (queue/internal/engine/chain.go), and then need one round trip of their own: eight
// heartbeats in 4×2 + 1 round trips, not 4×2 + 2. Each heartbeat is applied.
func TestChainedBatch(t *testing.T) {
	e, proxy, held := chainEnv(t)
	errs, trips := chainFixture(t, e, proxy, held)
	for i, err := range errs {
		require.NoError(t, err, "heartbeat of w%02d", i)
	}
	assert.EqualValues(t, 4*2+1, trips, "round trips: four lanes of two, then the queued batch's commit alone")
	assert.EqualValues(t, 5, proxy.execs.Load(), "commits: four lanes, then the queued four in one")
	for i, r := range held {
		assert.Equal(t, r.UnitID, e.worker(r.WorkerID)["current_unit"], "w%02d heartbeated", i)
	}
}

// When the commit that carries the next batch's first round trip aborts, the
// next batch still commits on what it read, once, and the aborted one tries
// again on its own: 4×2 + 1 round trips, and 2 more for the retry.
func TestChainedBatchAfterAbort(t *testing.T) {
	e, proxy, held := chainEnv(t)
	prefix := strings.TrimSuffix(e.keys.Meta, "meta")
	var carrier atomic.Int32
	carrier.Store(-1)
	var once sync.Once
	fn := func(chunk []byte) {
		once.Do(func() {
			// A write to the carrying worker's guard between its WATCH and
			// its EXEC, as another process's commit would make.
			exec := bytes.Index(chunk, []byte("EXEC\r\n"))
			for i, r := range held[:4] {
				if bytes.Contains(chunk[:exec], []byte(fence.WorkerKey(prefix, r.WorkerID))) {
					carrier.Store(int32(i))
					require.NoError(t, e.do("ZADD", fence.WorkerKey(prefix, r.WorkerID), "1", "another-process").Error())
				}
			}
		})
	}
	proxy.before.Store(&fn)
	errs, trips := chainFixture(t, e, proxy, held)
	for i, err := range errs {
		require.NoError(t, err, "heartbeat of w%02d", i)
	}
	require.NotEqual(t, int32(-1), carrier.Load(), "a commit carried the queued batch")
	assert.EqualValues(t, 4*2+1+2, trips, "round trips: the aborted carrier's retry takes two")
	assert.EqualValues(t, 6, proxy.execs.Load(), "commits: four lanes, the queued four in one, the carrier's again")
	for i, r := range held {
		assert.Equal(t, r.UnitID, e.worker(r.WorkerID)["current_unit"], "w%02d heartbeated", i)
	}
	pending := e.pending(e.keys.Units)
	require.Len(t, pending, len(held))
}
