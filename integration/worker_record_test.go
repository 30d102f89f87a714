package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two processes (two clients) acting as the same worker id: one settles
// units while the other keeps heartbeating and reporting liveness. Each
// transition reads the worker's record and writes it back; none may lose
// another's update, so processed ends equal to the units settled.
func TestWorkerRecordNoLostUpdate(t *testing.T) {
	const units = 60
	e := newEnv(t)
	ids := make([]string, units)
	for i := range ids {
		ids[i] = fmt.Sprintf("u%02d", i)
	}
	e.publish(ids, nil)
	other, err := queue.OpenKeys(srv.Client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)

	held := e.reservation("w1") // kept open, heartbeated by the other process
	ctx, stop := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	beats := 0
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := other.Heartbeat(ctx, held); err != nil && ctx.Err() == nil {
				t.Errorf("heartbeat: %v", err)
				return
			}
			if err := other.Liveness(ctx, "w1", held.UnitID); err != nil && ctx.Err() == nil {
				t.Errorf("liveness: %v", err)
				return
			}
			beats++
		}
	}()
	for i := 0; i < units-1; i++ {
		r := e.reservation("w1")
		require.NoError(t, e.build.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 1}))
	}
	stop()
	wg.Wait()
	require.NoError(t, e.build.Finalize(e.ctx, held, queue.Result{Outcome: "passed", DurationMS: 1}))
	assert.Greater(t, beats, 10, "the two processes overlapped")
	assert.EqualValues(t, units, e.worker("w1")["processed"])
	assert.Equal(t, fmt.Sprint(units), e.hash(e.keys.Meta)["finalized_count"])
}
