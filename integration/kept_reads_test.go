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
// the reads of its next transition (queue/kept_reads.go).
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
