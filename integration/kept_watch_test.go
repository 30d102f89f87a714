package integration

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idleReserve gives worker a reservation through b that finds nothing:
// after one that found nothing, its wait keeps a connection watching the
// worker's guard for its Liveness (queue/internal/engine/kept_watch.go).
func idleReserve(t *testing.T, e *env, b *queue.Build, worker string) {
	t.Helper()
	rs, err := b.ReserveBatch(e.ctx, worker, 1, queue.ReserveOptions{Block: 20 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, rs, "nothing to reserve")
}

// trips runs call and returns the round trips it took on n. It first
// waits for n to stay still for a while: what came before may still be
// giving back, disarmed, connections it no longer needs (an UNWATCH each,
// from a goroutine of its own), which are not call's round trips.
func trips(t *testing.T, n *atomic.Int64, call func() error) int64 {
	t.Helper()
	quiet(n)
	before := n.Load()
	require.NoError(t, call())
	return n.Load() - before
}

// quiet waits, up to 2 s, until n has not moved for 100 ms.
func quiet(n *atomic.Int64) {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		seen := n.Load()
		time.Sleep(100 * time.Millisecond)
		if n.Load() == seen {
			return
		}
	}
}

// staleFixture has w1 account for u1 through a counting Build, w2 take u1
// from it, and w1's heartbeat refused STALE on fresh reads: its connection
// is kept, watching w1's guard, for the stale_rejected w1 appends next.
func staleFixture(t *testing.T, e *env) (*queue.Build, *atomic.Int64, []byte) {
	t.Helper()
	e.publish([]string{"u1"}, nil)
	b, n, r := keptFixture(t, e, queue.ModeHeartbeat)
	rc, err := e.build.Reclaim(e.ctx, "w2", 0, 3)
	require.NoError(t, err)
	require.Equal(t, queue.ReclaimTaken, rc.Status, "w2 takes u1")
	require.ErrorIs(t, b.Heartbeat(e.ctx, r), queue.ErrStale)
	ev, err := events.StaleRejected{UnitID: r.UnitID, WorkerID: r.WorkerID, Operation: "heartbeat",
		Stream: string(r.Stream), EntryID: r.EntryID, DeliveryCount: r.DeliveryCount}.Encode()
	require.NoError(t, err)
	return b, n, ev
}

// staleRejected counts the stale_rejected events of the attempt log.
func staleRejected(e *env) int {
	k := 0
	for _, ev := range e.events() {
		if ev["type"] == "stale_rejected" {
			k++
		}
	}
	return k
}

// TestKeptWatchCommitsInOneRoundTrip: an idle worker's Liveness after a
// reservation whose wait carried its reads, and a stale_rejected right
// after a settlement refused STALE, each commit in one round trip; the
// first Liveness of a worker, after its first empty reservation, takes two.
func TestKeptWatchCommitsInOneRoundTrip(t *testing.T) {
	t.Run(queue.ModeLiveness, func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		e.reservation("w1")
		b, n := e.countedBuild()
		idleReserve(t, e, b, "w1")
		assert.EqualValues(t, 2, trips(t, n, func() error { return b.Liveness(e.ctx, "w1", "u1") }), "round trips of the first Liveness")
		idleReserve(t, e, b, "w1")
		assert.EqualValues(t, 1, trips(t, n, func() error { return b.Liveness(e.ctx, "w1", "") }), "round trips of a Liveness on a kept watch")
		assert.Nil(t, e.worker("w1")["current_unit"], "the Liveness wrote w1's record")

		idleReserve(t, e, b, "w3") // a worker with no record yet
		idleReserve(t, e, b, "w3")
		assert.EqualValues(t, 1, trips(t, n, func() error { return b.Liveness(e.ctx, "w3", "") }), "round trips of a first record's Liveness on a kept watch")
		assert.NotNil(t, e.worker("w3")["last_seen"], "the Liveness wrote w3's record")
	})
	t.Run("stale_rejected", func(t *testing.T) {
		e := newEnv(t)
		b, n, ev := staleFixture(t, e)
		assert.EqualValues(t, 1, trips(t, n, func() error { return b.AppendPrebuilt(e.ctx, "w1", ev) }), "round trips of the stale_rejected")
		assert.Equal(t, 1, staleRejected(e))
	})
}

// TestKeptWatchNeverCommitsWhatAnotherWorkerChanged: between the round
// trip that kept the watch and the transition that commits on it, another
// process commits a transition as the same worker, which moves its guard.
// The kept commit must abort and the transition start over on fresh
// reads: a Liveness that committed on its kept reads would write back the
// record as it was before the other commit (processed 0), and a
// stale_rejected would take one round trip.
func TestKeptWatchNeverCommitsWhatAnotherWorkerChanged(t *testing.T) {
	t.Run(queue.ModeLiveness, func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		r := e.reservation("w1")
		b, n := e.countedBuild()
		idleReserve(t, e, b, "w1")
		idleReserve(t, e, b, "w1")
		require.NoError(t, e.build.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 5}))
		trips := trips(t, n, func() error { return b.Liveness(e.ctx, "w1", "") })
		assert.EqualValues(t, 1, e.worker("w1")["processed"], "w1's record after a Liveness on reads its finalize changed")
		assert.EqualValues(t, 3, trips, "round trips: the aborted commit, then the reads and the commit")
	})
	t.Run("stale_rejected", func(t *testing.T) {
		e := newEnv(t)
		b, n, ev := staleFixture(t, e)
		require.NoError(t, e.build.Liveness(e.ctx, "w1", ""))
		assert.EqualValues(t, 3, trips(t, n, func() error { return b.AppendPrebuilt(e.ctx, "w1", ev) }), "round trips: the aborted commit, then the WATCH and the commit")
		assert.Equal(t, 1, staleRejected(e))
	})
}
