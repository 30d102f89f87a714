package integration

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keptFixture reserves u1 for w1 through a Build on a counting client, and
// runs the transitions before mode on it: the Build then keeps, for w1,
// the reads of its next transition (queue/internal/engine/kept_reads.go).
func keptFixture(t *testing.T, e *env, mode string) (*queue.Build, *atomic.Int64, queue.Reservation) {
	t.Helper()
	n := &atomic.Int64{}
	b, err := queue.OpenKeys(roundTripClient{Client: e.client, n: n}, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	x, ok := e.reserve("w1")
	require.True(t, ok)
	d, err := b.AccountDelivery(e.ctx, "w1", x.stream, x.id, x.unit)
	require.NoError(t, err)
	r := queue.Reservation{WorkerID: "w1", Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ,
		DeliveryCount: d.DeliveryCount, RetryIndex: d.RetryIndex, ReclaimCount: d.ReclaimCount}
	if mode == queue.ModeFinalize {
		require.NoError(t, b.Heartbeat(e.ctx, r))
	}
	return b, n, r
}

func keptCall(e *env, b *queue.Build, mode string, r queue.Reservation) error {
	if mode == queue.ModeHeartbeat {
		return b.Heartbeat(e.ctx, r)
	}
	return b.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 5})
}

// TestKeptReadsCommitInOneRoundTrip: a heartbeat right after its unit's
// delivery accounting, and a finalize right after a heartbeat, commit in
// one round trip on the reads the previous commit sent behind its EXEC.
func TestKeptReadsCommitInOneRoundTrip(t *testing.T) {
	for _, mode := range []string{queue.ModeHeartbeat, queue.ModeFinalize} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			e.publish([]string{"u1"}, nil)
			b, n, r := keptFixture(t, e, mode)
			before := n.Load()
			require.NoError(t, keptCall(e, b, mode, r))
			assert.EqualValues(t, 1, n.Load()-before, "round trips of the %s", mode)
		})
	}
}

// TestKeptReadsNeverCommitWhatAnotherWorkerChanged: between the commit
// that kept the reads and the transition that would stand on them, another
// process takes the unit (a reclaim with a zero timeout). The transition
// must be refused (STALE), its writes never applied, in every mode that
// commits on kept reads: the guards the kept WATCH armed moved, so the
// EXEC aborts and the fresh reads refuse. Built with -tags
// hopper_unfenced (no entry guards watched), the commit goes through on
// the kept reads and this fails.
func TestKeptReadsNeverCommitWhatAnotherWorkerChanged(t *testing.T) {
	for _, mode := range []string{queue.ModeHeartbeat, queue.ModeFinalize} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			e.publish([]string{"u1"}, nil)
			b, _, r := keptFixture(t, e, mode)
			other, err := queue.OpenKeys(e.client, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
			require.NoError(t, err)
			rc, err := other.Reclaim(e.ctx, "w2", 0, 3)
			require.NoError(t, err)
			require.Equal(t, queue.ReclaimTaken, rc.Status, "w2 takes u1")
			w1 := e.worker("w1")
			err = keptCall(e, b, mode, r)
			require.ErrorIs(t, err, queue.ErrStale, "w1's %s after w2 took its unit", mode)
			assert.Equal(t, "u1", e.worker("w2")["current_unit"], "w2 holds u1")
			assert.Equal(t, w1, e.worker("w1"), "w1's record rewritten after it lost the unit")
			count, err := e.do("HGET", e.keys.Meta, "finalized_count").ToString()
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(0), count, "finalized by a worker that lost the unit")
		})
	}
}

// countName returns how many of the logged commands are name, whatever
// their keys.
func (l *commandLog) countName(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.cmds {
		if c[0] == name {
			n++
		}
	}
	return n
}

// pacedFixture opens e's build on a client that logs its commands, and
// returns it with a function that runs one transition through it and
// tells how many WATCHes that sent and in how many round trips: none of
// these reads is used, so a WATCH beyond the transition's own is reads
// kept for the worker's next transition (queue/internal/engine/kept_reads.go).
func pacedFixture(t *testing.T, e *env) (*queue.Build, func(func() error) (watches, trips int64)) {
	t.Helper()
	n, log := &atomic.Int64{}, &commandLog{}
	b, err := queue.OpenKeys(roundTripClient{Client: e.client, n: n, log: log}, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	return b, func(call func() error) (int64, int64) {
		t.Helper()
		w, before := log.countName("WATCH"), n.Load()
		require.NoError(t, call())
		return int64(log.countName("WATCH") - w), n.Load() - before
	}
}

// pacedAccount reserves one entry for worker and accounts it through b,
// returning its reservation and the WATCHes the accounting sent.
func pacedAccount(t *testing.T, e *env, b *queue.Build, run func(func() error) (int64, int64), worker string) (queue.Reservation, int64) {
	t.Helper()
	x, ok := e.reserve(worker)
	require.True(t, ok)
	var d queue.Delivery
	watches, _ := run(func() (err error) {
		d, err = b.AccountDelivery(e.ctx, worker, x.stream, x.id, x.unit)
		return err
	})
	return queue.Reservation{WorkerID: worker, Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ,
		DeliveryCount: d.DeliveryCount, RetryIndex: d.RetryIndex, ReclaimCount: d.ReclaimCount}, watches
}

// TestKeptReadsStopForASlowWorker: a worker whose heartbeats come later
// than the keep window (1.2 s apart, as a real suite's come tens of
// seconds apart) pays for kept reads at most once per kind of pair: after
// its first late heartbeat, neither its heartbeats nor its next unit's
// accounting send the reads of a transition it will not call in time.
func TestKeptReadsStopForASlowWorker(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, nil)
	b, run := pacedFixture(t, e)
	r, first := pacedAccount(t, e, b, run, "w1")
	assert.EqualValues(t, 2, first, "WATCHes of a new worker's accounting: its own and the heartbeat's kept")
	beats := make([]int64, 3)
	for i := range beats {
		time.Sleep(1200 * time.Millisecond)
		beats[i], _ = run(func() error { return b.Heartbeat(e.ctx, r) })
	}
	assert.EqualValues(t, []int64{2, 1, 1}, beats, "WATCHes of heartbeats 1.2 s apart: kept reads stop after the first")
	_, settle := run(func() error { return b.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 5}) })
	assert.EqualValues(t, 2, settle, "round trips of a finalize on fresh reads")
	_, next := pacedAccount(t, e, b, run, "w1")
	assert.EqualValues(t, 1, next, "WATCHes of the accounting after a heartbeat came late: no kept reads")
}

// TestKeptReadsStayForAQuickWorker: a worker whose transitions come back
// to back commits each heartbeat and finalize in one round trip, unit
// after unit; and a worker that stopped getting kept reads because its
// heartbeat came late gets them back once its transitions come quickly
// again.
func TestKeptReadsStayForAQuickWorker(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2", "u3", "u4", "u5", "u6"}, nil)
	b, run := pacedFixture(t, e)
	unit := func(late time.Duration) (heartbeat, finalize int64) {
		t.Helper()
		r, _ := pacedAccount(t, e, b, run, "w1")
		time.Sleep(late)
		_, heartbeat = run(func() error { return b.Heartbeat(e.ctx, r) })
		_, finalize = run(func() error { return b.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 5}) })
		return heartbeat, finalize
	}
	for i := range 3 {
		hb, fin := unit(0)
		assert.EqualValues(t, []int64{1, 1}, []int64{hb, fin}, "round trips of unit %d's heartbeat and finalize, back to back", i+1)
	}
	unit(1200 * time.Millisecond) // late: no reads kept after the next accounting
	hb, fin := unit(0)
	assert.EqualValues(t, []int64{2, 1}, []int64{hb, fin}, "round trips after a late heartbeat: the heartbeat on fresh reads, the finalize on kept ones")
	hb, fin = unit(0)
	assert.EqualValues(t, []int64{1, 1}, []int64{hb, fin}, "round trips once the worker is quick again")
}
