package integration

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTripClient is a rueidis.Client that counts its round trips: one per
// Do or DoMulti, on the shared connections or on a dedicated one. With a
// log, it also keeps every command it sends.
type roundTripClient struct {
	rueidis.Client
	n   *atomic.Int64
	log *commandLog
}

func (c roundTripClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	c.log.add(cmd)
	return c.Client.Do(ctx, cmd)
}

func (c roundTripClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(1)
	c.log.add(cmds...)
	return c.Client.DoMulti(ctx, cmds...)
}

func (c roundTripClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(d rueidis.DedicatedClient) error {
		return fn(roundTripDedicated{d, c})
	})
}

func (c roundTripClient) Dedicate() (rueidis.DedicatedClient, func()) {
	d, cancel := c.Client.Dedicate()
	return roundTripDedicated{d, c}, cancel
}

// roundTripDedicated counts and logs for the roundTripClient it came from.
type roundTripDedicated struct {
	rueidis.DedicatedClient
	of roundTripClient
}

func (c roundTripDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.of.n.Add(1)
	c.of.log.add(cmd)
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c roundTripDedicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.of.n.Add(1)
	c.of.log.add(cmds...)
	return c.DedicatedClient.DoMulti(ctx, cmds...)
}

// commandLog keeps the commands a roundTripClient sent, each as its words.
// A nil log keeps nothing.
type commandLog struct {
	mu   sync.Mutex
	cmds [][]string
}

func (l *commandLog) add(cmds ...rueidis.Completed) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, cmd := range cmds {
		l.cmds = append(l.cmds, slices.Clone(cmd.Commands()))
	}
}

// count returns how many of the logged commands are name on key.
func (l *commandLog) count(name, key string) int {
	return l.countWhere(name, key, func([]string) bool { return true })
}

// countWhere returns how many of the logged commands are name on key and
// satisfy also, which is given each command's words.
func (l *commandLog) countWhere(name, key string, also func([]string) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.cmds {
		if len(c) > 1 && c[0] == name && c[1] == key && also(c) {
			n++
		}
	}
	return n
}

// countedBuild opens e's build a second time, as another process would,
// on a client that counts its round trips.
func (e *env) countedBuild() (*queue.Build, *atomic.Int64) {
	e.t.Helper()
	n := &atomic.Int64{}
	b, err := queue.OpenKeys(roundTripClient{Client: e.client, n: n}, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(e.t, err)
	return b, n
}

// reclaimCounted reclaims through b and returns the outcome and the round
// trips it took.
func reclaimCounted(t *testing.T, b *queue.Build, n *atomic.Int64, worker string, timeout time.Duration) (queue.Reclaimed, int64) {
	t.Helper()
	before := n.Load()
	rc, err := b.Reclaim(context.Background(), worker, timeout, 3)
	require.NoError(t, err)
	return rc, n.Load() - before
}

// TestReclaimRoundTrips: a reclaim that claims takes three round trips (scan,
// watch and read with the unit's state, commit) when its build has seen the
// entry before, in an earlier reclaim's pending window or in one of its own
// workers' reads, and four when the entry is new to it (the unit's state is
// read once the entry names the unit). Either way the claim is the same.
func TestReclaimRoundTrips(t *testing.T) {
	held := queue.Reservation{WorkerID: "w2", Stream: queue.StreamUnits, UnitID: "u1", UnitType: "file", DeliveryCount: 2, ReclaimCount: 1}
	check := func(t *testing.T, e *env, rc queue.Reclaimed, entryID, worker string) {
		t.Helper()
		require.Equal(t, queue.ReclaimTaken, rc.Status)
		want := held
		want.EntryID, want.WorkerID = entryID, worker
		assert.Equal(t, want, rc.Reservation)
		assert.Equal(t, `{"retry_index":0,"reclaim_count":1,"entered_retry":false}`, e.unitState("u1"))
		assert.Equal(t, []pendingRow{{entryID, worker, 2}}, e.pending(e.keys.Units))
	}

	t.Run("seen in an earlier window", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		r := e.reservation("w1")
		b, n := e.countedBuild()
		// The first reclaim of a worker may also name it a consumer of both
		// groups, as the reference's XAUTOCLAIM does on Redis 7.2 and later
		// (see queue/internal/machinery/consumers.go): one more round trip, once.
		rc, _ := reclaimCounted(t, b, n, "w2", time.Minute)
		assert.Equal(t, queue.ReclaimNone, rc.Status)
		rc, trips := reclaimCounted(t, b, n, "w2", time.Minute)
		assert.Equal(t, queue.ReclaimNone, rc.Status)
		assert.EqualValues(t, 1, trips, "a reclaim that finds nothing idle")
		time.Sleep(40 * time.Millisecond)
		rc, trips = reclaimCounted(t, b, n, "w2", 20*time.Millisecond)
		check(t, e, rc, r.EntryID, "w2")
		assert.EqualValues(t, 3, trips, "a reclaim of an entry seen in an earlier window")
	})

	t.Run("new to the build", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		r := e.reservation("w1")
		b, n := e.countedBuild()
		time.Sleep(40 * time.Millisecond)
		rc, trips := reclaimCounted(t, b, n, "w2", 20*time.Millisecond)
		check(t, e, rc, r.EntryID, "w2")
		assert.EqualValues(t, 4, trips, "a reclaim of an entry the build never saw")
	})

	t.Run("read by the build's own worker", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		b, n := e.countedBuild()
		r, ok, err := b.Reserve(e.ctx, "w1", queue.ReserveOptions{Timeout: time.Minute, Block: time.Millisecond})
		require.NoError(t, err)
		require.True(t, ok)
		time.Sleep(40 * time.Millisecond)
		rc, trips := reclaimCounted(t, b, n, "w2", 20*time.Millisecond)
		check(t, e, rc, r.EntryID, "w2")
		assert.EqualValues(t, 3, trips, "a reclaim of an entry its own worker read")
	})
}
