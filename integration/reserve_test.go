package integration

import (
	"math"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// published is a lifecycle whose build was published from units.
func published(t *testing.T, units ...string) *lifecycle {
	t.Helper()
	l := newLifecycle(t)
	_, err := l.build.Join(l.ctx, "publisher", manifestOf(units...), fastJoin)
	require.NoError(t, err)
	return l
}

var quick = queue.ReserveOptions{Timeout: time.Minute, Block: 50 * time.Millisecond}

func TestReserveServesRequeuedUnitsFirst(t *testing.T) {
	l := published(t, "u1", "u2", "u3")
	r, ok, err := l.build.Reserve(l.ctx, "w1", quick)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, queue.Reservation{
		WorkerID: "w1", Stream: queue.StreamUnits, EntryID: r.EntryID, UnitID: "u1", UnitType: "file", DeliveryCount: 1,
	}, r)
	evs := l.events()
	require.Len(t, evs, 1)
	assert.Equal(t, "delivered", evs[0]["type"])

	q, err := l.build.Requeue(l.ctx, r, queue.Result{FailureSummary: "1 failure(s)"}, queue.Budgets{})
	require.NoError(t, err)
	require.True(t, q.Requeued, "meta's frozen budget (2 requeues) allows it")

	r, ok, err = l.build.Reserve(l.ctx, "w2", quick)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "u1", r.UnitID, "the requeued unit comes before u2")
	assert.Equal(t, queue.StreamPriority, r.Stream)
	assert.EqualValues(t, 1, r.RetryIndex)
	assert.EqualValues(t, 2, r.OwnershipGeneration())
}

func TestReserveReclaimsFirst(t *testing.T) {
	l := published(t, "u1", "u2")
	lost, ok, err := l.build.Reserve(l.ctx, "w1", quick)
	require.NoError(t, err)
	require.True(t, ok)
	time.Sleep(150 * time.Millisecond)

	r, ok, err := l.build.Reserve(l.ctx, "w2", queue.ReserveOptions{Timeout: 100 * time.Millisecond, Block: 50 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, lost.UnitID, r.UnitID, "the silent worker's unit comes before u2")
	assert.Equal(t, lost.EntryID, r.EntryID)
	assert.EqualValues(t, 2, r.DeliveryCount)
	assert.EqualValues(t, 1, r.ReclaimCount)
	assert.Equal(t, "file", r.UnitType)
	require.ErrorIs(t, l.build.Heartbeat(l.ctx, lost), queue.ErrStale, "the old owner is fenced out")
}

func TestReserveEmptyQueueWaitsBlock(t *testing.T) {
	l := published(t, "u1")
	_, ok, err := l.build.Reserve(l.ctx, "w1", quick)
	require.NoError(t, err)
	require.True(t, ok)

	start := time.Now()
	_, ok, err = l.build.Reserve(l.ctx, "w2", queue.ReserveOptions{Timeout: time.Minute, Block: 200 * time.Millisecond})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.GreaterOrEqual(t, time.Since(start), 190*time.Millisecond, "XREADGROUP BLOCK 200")

	p, err := l.build.Progress(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Progress{Finalized: 0, Total: 1}, p)
	assert.False(t, p.Complete(), "an empty queue is not completion")
}

func TestReserveMissingGroupIsCorruption(t *testing.T) {
	l := published(t, "u1")
	require.NoError(t, l.do("XGROUP", "DESTROY", l.keys.Units, "workers").Error())
	_, _, err := l.build.Reserve(l.ctx, "w1", quick)
	require.ErrorIs(t, err, queue.ErrCorrupt)
	assert.Contains(t, err.Error(), "NOGROUP")
}

func TestMissingMetaIsCorruptionNeverReinitialization(t *testing.T) {
	l := published(t, "u1")
	require.NoError(t, l.do("DEL", l.keys.Meta).Error())
	l.requireUnchanged(func() {
		_, err := l.build.Progress(l.ctx)
		require.ErrorIs(t, err, queue.ErrCorrupt)
		_, _, err = l.build.Reserve(l.ctx, "w1", quick)
		require.ErrorIs(t, err, queue.ErrCorrupt)
		_, err = l.open().Join(l.ctx, "w1", manifestOf("u1"), fastJoin)
		require.ErrorIs(t, err, queue.ErrBuildBurnt)
	})
}

func TestReserveValidation(t *testing.T) {
	l := published(t, "u1")
	for _, opts := range []queue.ReserveOptions{
		{Timeout: -time.Second}, {Block: -time.Millisecond}, {Block: time.Microsecond},
	} {
		_, _, err := l.build.Reserve(l.ctx, "w1", opts)
		require.ErrorIs(t, err, queue.ErrInvalidArgument, "%+v", opts)
	}
	_, _, err := l.build.Reserve(l.ctx, "", quick)
	require.ErrorIs(t, err, queue.ErrInvalidArgument)
}

// A Block near the largest time.Duration asks Reserve to wait as long as it
// can; it must still hand out a queued unit. What it guards: Reserve bounds
// each read by Block plus a margin, and that sum overflowed to a deadline in
// the past, so every read failed at once with "context deadline exceeded".
func TestReserveHugeBlock(t *testing.T) {
	l := published(t, "u1")
	r, ok, err := l.build.Reserve(l.ctx, "w1", queue.ReserveOptions{Timeout: time.Minute, Block: math.MaxInt64})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "u1", r.UnitID)
}
