package cluster

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// Every transition, through queue.Transition (the reference script's
// arguments and replies) and through the typed API, on a build on each of
// the three shards.
func TestClusterTransitions(t *testing.T) {
	for primary, ids := range idsOnEveryPrimary(t, 2) {
		t.Run("script API on "+primary, func(t *testing.T) { scriptTransitions(t, ids[0]) })
		t.Run("typed API on "+primary, func(t *testing.T) { typedTransitions(t, ids[1]) })
	}
}

func scriptTransitions(t *testing.T, id string) {
	b := newBuild(t, id)
	units := []string{"u1", "u2", "u3"}
	b.publish(manifestOf(units))
	k := b.keys
	keys := []string{k.Units, k.Priority, k.Attempts, k.Meta, k.UnitState, k.Workers}
	ttlMS := strconv.FormatInt(ttl.Milliseconds(), 10)
	call := func(argv ...string) []any {
		t.Helper()
		reply, err := queue.Transition(b.ctx, b.client, keys, argv)
		require.NoError(t, err, "Transition %v", argv)
		return reply
	}
	read := func(worker string, stream queue.Stream) (entryID, unit string) {
		t.Helper()
		key := k.Units
		if stream == queue.StreamPriority {
			key = k.Priority
		}
		res, err := b.client.Do(b.ctx, b.client.B().Xreadgroup().Group(queue.Group, worker).Count(1).Streams().Key(key).Id(">").Build()).AsXRead()
		require.NoError(t, err)
		for _, entries := range res {
			require.Len(t, entries, 1)
			return entries[0].ID, entries[0].FieldValues["id"]
		}
		t.Fatalf("nothing to read from %s", key)
		return "", ""
	}

	// u1: delivered, heartbeated, requeued, then finalized from the priority stream.
	e1, u := read("w1", queue.StreamUnits)
	assert.Equal(t, "u1", u)
	assert.Equal(t, []any{"OK", int64(1), int64(0), int64(0)}, call("delivery_accounting", "w1", ttlMS, "units", e1, u))
	assert.Equal(t, []any{"OK"}, call("heartbeat", "w1", ttlMS, "units", e1, "1", u))
	assert.Equal(t, []any{"REQUEUED", int64(1)}, call("requeue", "w1", ttlMS, "units", e1, "1", u, "package", "1", "1", "5", "boom", ""))
	p1, u := read("w2", queue.StreamPriority)
	assert.Equal(t, "u1", u)
	assert.Equal(t, []any{"OK", int64(1), int64(1), int64(0)}, call("delivery_accounting", "w2", ttlMS, "units:priority", p1, u))
	assert.Equal(t, []any{"OK"}, call("finalize", "w2", ttlMS, "units:priority", p1, "1", u, "passed", "12", "", ""))
	assert.Equal(t, []any{"STALE"}, call("finalize", "w2", ttlMS, "units:priority", p1, "1", u, "passed", "12", "", ""))

	// u2: delivered to w1, abandoned, reclaimed by w2, finalized failed.
	e2, u := read("w1", queue.StreamUnits)
	assert.Equal(t, "u2", u)
	call("delivery_accounting", "w1", ttlMS, "units", e2, u)
	assert.Equal(t, []any{"OK"}, call("abandoned", "w1", ttlMS, "units", e2, "1", u, "900"))
	time.Sleep(5 * time.Millisecond)
	assert.Equal(t, []any{"OK", "units", e2, "u2", "package", int64(2), int64(0), int64(1)}, call("reclaim", "w2", ttlMS, "1", "3"))
	assert.Equal(t, []any{"STALE"}, call("heartbeat", "w1", ttlMS, "units", e2, "1", u))
	assert.Equal(t, []any{"OK"}, call("finalize", "w2", ttlMS, "units", e2, "2", u, "failed", "7", "test_failure", ""))

	// u3: its owners go silent until its reclaim budget (3, frozen in meta)
	// is spent.
	e3, u := read("w1", queue.StreamUnits)
	call("delivery_accounting", "w1", ttlMS, "units", e3, u)
	for i := 1; i <= 3; i++ {
		time.Sleep(5 * time.Millisecond)
		assert.Equal(t, []any{"OK", "units", e3, "u3", "package", int64(i + 1), int64(0), int64(i)},
			call("reclaim", fmt.Sprintf("r%d", i), ttlMS, "1", "3"))
	}
	time.Sleep(5 * time.Millisecond)
	assert.Equal(t, []any{"FINALIZED", "u3"}, call("reclaim", "w2", ttlMS, "1", "3"))
	assert.Equal(t, []any{"NONE"}, call("reclaim", "w2", ttlMS, "1", "3"))
	assert.Equal(t, []any{"OK"}, call("liveness", "w2", ttlMS, ""))
	assert.Equal(t, []any{"OK"}, call("worker_error", "w2", ttlMS, `{"type":"worker_error","worker_id":"w2"}`))

	types := b.requireFinalizedOnce(units)
	assert.Equal(t, map[string]int{
		events.TypeDelivered: 4, events.TypeRequeued: 1, events.TypeFinalized: 3, events.TypeAbandoned: 1,
		events.TypeReclaimed: 4, events.TypeWorkerError: 1,
	}, withoutZero(types))
	b.requireOnOneNode()
}

func typedTransitions(t *testing.T, id string) {
	b := newBuild(t, id)
	units := []string{"u1", "u2", "u3", "u4"}
	b.publish(manifestOf(units))
	opts := queue.ReserveOptions{Timeout: time.Minute, Block: 10 * time.Millisecond}
	reserve := func(worker string) queue.Reservation {
		t.Helper()
		r, ok, err := b.q.Reserve(b.ctx, worker, opts)
		require.NoError(t, err)
		require.True(t, ok, "nothing reserved for %s", worker)
		return r
	}
	failed := queue.Result{Outcome: "failed", DurationMS: 5, Reason: "test_failure"}
	passed := queue.Result{Outcome: "passed", DurationMS: 12}

	r := reserve("w1")
	require.NoError(t, b.q.Heartbeat(b.ctx, r))
	q, err := b.q.Requeue(b.ctx, r, failed, queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1, MaxReclaims: 3})
	require.NoError(t, err)
	assert.True(t, q.Requeued)
	r = reserve("w2")
	assert.Equal(t, queue.StreamPriority, r.Stream)
	require.NoError(t, b.q.Finalize(b.ctx, r, passed))
	require.ErrorIs(t, b.q.Finalize(b.ctx, r, passed), queue.ErrStale)

	r = reserve("w1")
	require.NoError(t, b.q.Abandon(b.ctx, r, 900))
	time.Sleep(5 * time.Millisecond)
	rc, err := b.q.Reclaim(b.ctx, "w2", time.Millisecond, 3)
	require.NoError(t, err)
	require.Equal(t, queue.ReclaimTaken, rc.Status)
	assert.Equal(t, r.EntryID, rc.Reservation.EntryID)
	require.ErrorIs(t, b.q.Heartbeat(b.ctx, r), queue.ErrStale)
	require.NoError(t, b.q.Finalize(b.ctx, rc.Reservation, passed))

	// Two workers race for the last units: each is finalized once.
	var wg sync.WaitGroup
	for _, w := range []string{"w3", "w4"} {
		wg.Go(func() {
			for {
				r, ok, err := b.q.Reserve(b.ctx, w, opts)
				if !assert.NoError(t, err) || !ok {
					return
				}
				assert.NoError(t, b.q.Finalize(b.ctx, r, passed))
			}
		})
	}
	wg.Wait()
	require.NoError(t, b.q.Liveness(b.ctx, "w3", ""))
	require.NoError(t, b.q.AppendPrebuilt(b.ctx, "w3", []byte(`{"type":"worker_error","worker_id":"w3"}`)))
	p, err := b.q.Progress(b.ctx)
	require.NoError(t, err)
	assert.True(t, p.Complete(), "progress %+v", p)

	types := b.requireFinalizedOnce(units)
	assert.Equal(t, 1, types[events.TypeRequeued])
	assert.Equal(t, 1, types[events.TypeReclaimed])
	assert.Equal(t, 1, types[events.TypeAbandoned])
	b.requireOnOneNode()
}

func withoutZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// Publishing on a cluster: of many workers racing for the lease of a build,
// exactly one wins and publishes; the others join the published build; the
// same happens at once on builds of every shard.
func TestClusterPublish(t *testing.T) {
	var wg sync.WaitGroup
	for primary, ids := range idsOnEveryPrimary(t, 2) {
		for _, id := range ids {
			wg.Go(func() { racePublish(t, primary, id) })
		}
	}
	wg.Wait()
}

func racePublish(t *testing.T, primary, id string) {
	const workers = 6
	units := unitNames(10)
	m := manifestOf(units)
	var (
		mu        sync.Mutex
		won       []string
		published []string
		joined    = map[string]queue.Manifest{}
		wg        sync.WaitGroup
	)
	for i := range workers {
		worker := fmt.Sprintf("ci-%d", i)
		b := newBuild(t, id)
		wg.Go(func() {
			lease, ok, err := b.q.TryLease(b.ctx, worker, 0)
			if !assert.NoError(t, err) {
				return
			}
			if ok {
				mu.Lock()
				won = append(won, worker)
				mu.Unlock()
				if assert.NoError(t, b.q.Publish(b.ctx, lease, m, time.Hour)) {
					mu.Lock()
					published = append(published, worker)
					mu.Unlock()
				}
				return
			}
			j, err := b.q.Join(b.ctx, worker, m, queue.JoinOptions{InitTimeout: 10 * time.Second, PollInterval: 10 * time.Millisecond})
			if assert.NoError(t, err) {
				mu.Lock()
				joined[worker] = j.Manifest
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, won, 1, "lease winners of %s on %s", id, primary)
	assert.Equal(t, won, published)
	assert.Len(t, joined, workers-1)
	for w, got := range joined {
		assert.Equal(t, units, got.UnitIDs, "manifest joined by %s", w)
	}
	b := newBuild(t, id)
	s, err := b.q.Status(b.ctx)
	require.NoError(t, err)
	assert.True(t, s.Published)
	n, err := b.admin.Do(b.ctx, b.admin.B().Xlen().Key(b.keys.Units).Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, len(units), n, "units stream of %s", id)
	b.requireOnOneNode()
}
