package integration

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aheadFixture opens e's build on a client that counts round trips and
// logs commands, as a worker's process would (queue/read_ahead.go).
func aheadFixture(t *testing.T, e *env) (*queue.Build, *atomic.Int64, *commandLog) {
	t.Helper()
	n, log := &atomic.Int64{}, &commandLog{}
	b, err := queue.OpenKeys(roundTripClient{Client: e.client, n: n, log: log}, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	return b, n, log
}

// reserveOne reserves through b, and returns the one unit it gave.
func reserveOne(t *testing.T, e *env, b *queue.Build, worker string, opts queue.ReserveOptions) queue.Reservation {
	t.Helper()
	rs, err := b.ReserveBatch(e.ctx, worker, 1, opts)
	require.NoError(t, err)
	require.Len(t, rs, 1, "%s reserves", worker)
	return rs[0]
}

func passed(t *testing.T, e *env, b *queue.Build, r queue.Reservation) {
	t.Helper()
	require.NoError(t, b.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 5}), "finalize %s", r.UnitID)
}

// TestReadAheadReservesWithoutAReadOfItsOwn: a worker that reserves with
// ReadAhead, heartbeats and finalizes gets its next unit without a round
// trip of its own for the reclaim's first look or an XREADGROUP: they went
// behind the finalize's EXEC. Only the delivery accounting's two round
// trips are left. Its first finalize reads the priority stream ahead, and
// finds it empty; from then on, while nothing is added there, the units
// stream.
func TestReadAheadReservesWithoutAReadOfItsOwn(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2", "u3"}, nil)
	b, n, log := aheadFixture(t, e)
	opts := queue.ReserveOptions{ReadAhead: true}
	r := reserveOne(t, e, b, "w1", opts)
	require.NoError(t, b.Heartbeat(e.ctx, r))
	passed(t, e, b, r)
	r = reserveOne(t, e, b, "w1", opts)
	require.Equal(t, "u2", r.UnitID)
	require.NoError(t, b.Heartbeat(e.ctx, r))
	passed(t, e, b, r)
	reads, trips := log.countName("XREADGROUP"), n.Load()
	next := reserveOne(t, e, b, "w1", opts)
	assert.Equal(t, "u3", next.UnitID)
	assert.Zero(t, log.countName("XREADGROUP")-reads, "XREADGROUPs sent by the reservation after the finalize")
	assert.EqualValues(t, 2, n.Load()-trips, "round trips of the reservation after the finalize: its accounting alone")
	assert.Equal(t, []pendingRow{{next.EntryID, "w1", 1}}, e.pending(e.keys.Units), "pending: w1's unit alone (COUNT 1)")
}

// aheadOrder runs one worker, w1, through a build where a unit is
// requeued by w2 and another left idle by w3, and returns the units w1
// gets, in order, and how many XREADGROUPs its reservations after the
// first sent of their own.
func aheadOrder(t *testing.T, readAhead bool) (units []string, reads int) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2", "u3", "u4", "u5"}, map[string]string{"max_requeues": "1", "requeue_tolerance": "1"})
	b, _, log := aheadFixture(t, e)
	timeout := 400 * time.Millisecond
	opts := queue.ReserveOptions{Timeout: timeout, Block: 10 * time.Millisecond, ReadAhead: readAhead}
	other := queue.ReserveOptions{Timeout: timeout, Block: 10 * time.Millisecond}
	silent := reserveOne(t, e, e.build, "w3", other) // u1, left idle
	var got []string
	r := reserveOne(t, e, b, "w1", opts) // u2
	got = append(got, r.UnitID)
	requeued := reserveOne(t, e, e.build, "w2", other) // u3, back on the priority stream
	_, err := e.build.Requeue(e.ctx, requeued, queue.Result{DurationMS: 5, FailureSummary: "1 failure(s)"},
		queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1, MaxReclaims: 3})
	require.NoError(t, err)
	time.Sleep(timeout + 100*time.Millisecond) // u1 is now due for a reclaim
	for range 4 {
		passed(t, e, b, r)
		var held []string
		for _, row := range append(e.pending(e.keys.Priority), e.pending(e.keys.Units)...) {
			if row.Consumer == "w1" {
				held = append(held, row.ID)
			}
		}
		assert.LessOrEqual(t, len(held), 1, "entries pending under w1 after it settled %s: at most COUNT 1, none waiting behind the next", r.UnitID)
		before := log.countName("XREADGROUP")
		r = reserveOne(t, e, b, "w1", opts)
		reads += log.countName("XREADGROUP") - before
		got = append(got, r.UnitID)
	}
	passed(t, e, b, r)
	assert.Contains(t, got, silent.UnitID, "the idle unit is reclaimed")
	return got, reads
}

// TestReadAheadKeepsTheOrder: the units come in the same order with
// read-ahead as without (a due reclaim first, then the priority stream,
// then the units stream), but for the entry the read-ahead delivered when
// its look first showed the reclaim: that one goes first, since nothing
// heartbeats it while it waits (docs/design.md#read-ahead). With
// read-ahead the reservations read less on their own.
func TestReadAheadKeepsTheOrder(t *testing.T) {
	got, without := aheadOrder(t, false)
	assert.Equal(t, []string{"u2", "u1", "u3", "u4", "u5"}, got, "without read-ahead")
	got, with := aheadOrder(t, true)
	assert.Equal(t, []string{"u2", "u3", "u1", "u4", "u5"}, got, "with read-ahead: u3, read ahead from priority, before the reclaim")
	assert.Less(t, with, without, "XREADGROUPs of the reservations with read-ahead, against without")
}

// TestReadAheadOfAStoppedWorkerIsReclaimed: the entry read ahead for a
// worker that then stops stays pending under its name, and another
// worker reclaims it after the timeout: every unit is finalized exactly
// once.
func TestReadAheadOfAStoppedWorkerIsReclaimed(t *testing.T) {
	e := newEnv(t)
	units := []string{"u1", "u2", "u3", "u4"}
	e.publish(units, nil)
	b, _, _ := aheadFixture(t, e)
	timeout := 300 * time.Millisecond
	opts := queue.ReserveOptions{Timeout: timeout, ReadAhead: true}
	passed(t, e, b, reserveOne(t, e, b, "w1", opts)) // reads the priority stream ahead: empty
	passed(t, e, b, reserveOne(t, e, b, "w1", opts)) // reads u3 ahead
	pending := e.pending(e.keys.Units)
	require.Len(t, pending, 1, "entries pending once w1 finalized u2")
	assert.Equal(t, "w1", pending[0].Consumer, "the entry read ahead is w1's")
	// w1 stops. w2 drains the build.
	start := time.Now()
	var reclaimed []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		rs, err := e.build.ReserveBatch(e.ctx, "w2", 1, queue.ReserveOptions{Timeout: timeout, Block: 20 * time.Millisecond})
		require.NoError(t, err)
		for _, r := range rs {
			if r.ReclaimCount > 0 {
				reclaimed = append(reclaimed, r.UnitID)
			}
			passed(t, e, e.build, r)
		}
		p, err := e.build.Progress(e.ctx)
		require.NoError(t, err)
		if p.Complete() {
			break
		}
	}
	assert.Equal(t, []string{"u3"}, reclaimed, "units w2 reclaimed")
	assert.GreaterOrEqual(t, time.Since(start), timeout, "the reclaim came after the timeout")
	finals := map[string]int{}
	for _, ev := range e.events() {
		if ev["type"] == "finalized" {
			finals[ev["unit_id"].(string)]++
		}
	}
	assert.Equal(t, map[string]int{"u1": 1, "u2": 1, "u3": 1, "u4": 1}, finals, "finalized events per unit")
	assert.Empty(t, e.pending(e.keys.Units), "pending at the end")
	assert.Empty(t, e.pending(e.keys.Priority), "pending on priority at the end")
}
