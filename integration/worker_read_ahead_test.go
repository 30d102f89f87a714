package integration

import (
	"context"
	"testing"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker stopped while its unit runs, whose unit still passes, settles
// it without reading ahead (queue.ReserveOptions.ReadAhead): it will not
// reserve again, so nothing is left pending under its name for a reclaim.
func TestBuildWorkerStoppingReadsNothingAhead(t *testing.T) {
	f := newFleet(t, "u1", "u2", "u3", "u4")
	ctxA, stopA := context.WithCancel(f.ctx)
	defer stopA()
	ran := 0
	doneA := f.start(ctxA, f.config("ci-a"), func(ctx context.Context, r queue.Reservation) worker.Result {
		// The first settlement reads the priority stream ahead, and finds
		// it empty; the second would read u3 ahead.
		if ran++; ran == 2 {
			stopA()
		}
		return worker.Result{Outcome: worker.Passed, Output: []byte("ok " + r.UnitID + "\n")}
	})
	require.ErrorIs(t, <-doneA, context.Canceled)
	assert.Empty(t, f.pending(f.keys.Units), "entries pending once the stopped worker settled u2")
	errs := f.run([]worker.Config{f.config("ci-b")}, passWith)
	require.NoError(t, errs[0])
	f.requireFinalizedOnce()
}
