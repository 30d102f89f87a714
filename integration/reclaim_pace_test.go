package integration

import (
	"slices"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReservationsLookForIdleEntriesAtAPace: a reservation's first look
// for idle entries that finds none stays good for the Build's other
// reservations on the same timeout for an eighth of it (at most a second;
// queue/reclaim_pace.go): the second reservation sends no XPENDING, the
// one after that time does, and a silent owner's unit is still reclaimed
// once it is idle.
func TestReservationsLookForIdleEntriesAtAPace(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2", "u3", "u4"}, nil)
	b, _, log := aheadFixture(t, e)
	timeout := 400 * time.Millisecond // looks stay good for 50 ms
	opts := queue.ReserveOptions{Timeout: timeout, Block: 10 * time.Millisecond}
	idleScans := func() int { return firstLooks(e, log) }
	silent := reserveOne(t, e, b, "w1", opts)
	looks := idleScans()
	require.Positive(t, looks, "the first reservation looks")
	passed(t, e, b, reserveOne(t, e, b, "w2", opts))
	assert.Equal(t, looks, idleScans(), "first looks of a reservation right after a quiet look")

	time.Sleep(timeout + 50*time.Millisecond)
	r := reserveOne(t, e, b, "w2", opts)
	assert.Greater(t, idleScans(), looks, "a reservation once the look is old looks again")
	assert.Equal(t, silent.UnitID, r.UnitID, "w2 takes w1's idle unit")
	assert.EqualValues(t, 1, r.ReclaimCount)
}

// TestReservationWithoutALookFindsMetaGone: a reservation that sends no
// first look still reads meta, with its priority read, and finds a build
// whose meta is gone corrupt, before it waits on the units stream.
func TestReservationWithoutALookFindsMetaGone(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, nil)
	b, n, log := aheadFixture(t, e)
	opts := queue.ReserveOptions{Timeout: time.Minute, Block: 5 * time.Second}
	reserveOne(t, e, b, "w1", opts)
	require.NoError(t, e.do("DEL", e.keys.Meta).Error())
	looks, trips := firstLooks(e, log), n.Load()
	start := time.Now()
	_, err := b.ReserveBatch(e.ctx, "w2", 1, opts)
	require.ErrorIs(t, err, queue.ErrCorrupt)
	assert.Contains(t, err.Error(), `reservation by "w2"`)
	assert.Equal(t, looks, firstLooks(e, log), "no first look: the last one was quiet")
	assert.EqualValues(t, 1, n.Load()-trips, "meta is read with the priority stream, in one round trip")
	assert.Less(t, time.Since(start), opts.Block, "corrupt before any wait on the units stream")
}

// firstLooks counts the first looks of reclaims in log: their XPENDING
// ... IDLE of the units stream.
func firstLooks(e *env, log *commandLog) int {
	return log.countWhere("XPENDING", e.keys.Units, func(c []string) bool { return slices.Contains(c, "IDLE") })
}
