package integration

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue"
)

// A reclaim's choice of stream and entry stands on which entries the
// pending windows hold, not only on the idle ones: when a busy entry of the
// priority window is settled between the reclaim's reads and its commit,
// the entry past the window moves into it, and the reference, run after
// that settlement, claims it if it is idle. So the commit must abort and
// look again, here claiming the priority stream's idle entry instead of
// the units stream's it had chosen.
func TestReclaimWatchesItsWindow(t *testing.T) {
	e := newEnv(t)
	n := fence.ScanWindow + 1
	e.publish([]string{"u"}, map[string]string{"total_units": fmt.Sprint(n + 1)})
	for i := 1; i <= n; i++ {
		u := fmt.Sprintf("p%d", i)
		require.NoError(t, e.do("XADD", e.keys.Priority, "*", "id", u, "type", "file").Error())
		require.NoError(t, e.do("HSET", e.keys.UnitState, u, `{"retry_index":1,"reclaim_count":0,"entered_retry":true}`).Error())
	}
	var prio []entry
	for range n {
		x, ok := e.reserve("busy")
		require.True(t, ok)
		require.Equal(t, queue.StreamPriority, x.stream)
		prio = append(prio, x)
	}
	lost, ok := e.reserve("gone")
	require.True(t, ok)
	require.Equal(t, queue.StreamUnits, lost.stream)
	d, err := e.build.AccountDelivery(e.ctx, "busy", queue.StreamPriority, prio[0].id, prio[0].unit)
	require.NoError(t, err)
	first := queue.Reservation{WorkerID: "busy", Stream: queue.StreamPriority, EntryID: prio[0].id, UnitID: prio[0].unit,
		UnitType: prio[0].typ, DeliveryCount: d.DeliveryCount, RetryIndex: d.RetryIndex, ReclaimCount: d.ReclaimCount}

	// The last priority entry and the units entry go idle; the first
	// window's worth of priority entries is busy again (XCLAIM ... JUSTID
	// resets their idle time, their delivery counts unchanged).
	const timeout = time.Second
	time.Sleep(timeout + 100*time.Millisecond)
	args := []string{"XCLAIM", e.keys.Priority, queue.Group, "busy", "0"}
	for _, x := range prio[:fence.ScanWindow] {
		args = append(args, x.id)
	}
	require.NoError(t, e.do(append(args, "JUSTID")...).Error())

	proxy := newExecProxy(t, 300*time.Millisecond)
	rb, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	proxy.armed.Store(1)
	var got queue.Reclaimed
	var rerr error
	var wg sync.WaitGroup
	wg.Go(func() { got, rerr = rb.Reclaim(e.ctx, "r", timeout, 3) })
	<-proxy.held // its reads made: nothing idle in the priority window, the units entry idle
	require.NoError(t, e.build.Finalize(e.ctx, first, queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}))
	wg.Wait()
	require.NoError(t, rerr)
	require.Equal(t, queue.ReclaimTaken, got.Status)
	assert.Equal(t, queue.StreamPriority, got.Reservation.Stream, "claimed %s from %s", got.UnitID, got.Reservation.Stream)
	assert.Equal(t, prio[n-1].unit, got.UnitID, "the idle entry that entered the window")
	assert.Equal(t, "gone", e.pending(e.keys.Units)[0].Consumer, "the units entry stays with its owner")
}
