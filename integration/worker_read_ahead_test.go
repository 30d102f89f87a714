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
	doneA := f.start(ctxA, f.config("ci-a"), func(ctx context.Context, r queue.Reservation) worker.Result {
		stopA()
		return worker.Result{Outcome: worker.Passed, Output: []byte("ok " + r.UnitID + "\n")}
	})
	require.ErrorIs(t, <-doneA, context.Canceled)
	assert.Empty(t, f.pending(f.keys.Units), "entries pending once the stopped worker settled u1")
	errs := f.run([]worker.Config{f.config("ci-b")}, passWith)
	require.NoError(t, errs[0])
	f.requireFinalizedOnce()
}
