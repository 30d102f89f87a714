package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/report"
)

// The primary of a build's slot fails over to its replica while the
// build's workers run it (CLUSTER FAILOVER: the replica catches up, then
// takes over; the old primary becomes its replica), then back. Nothing is
// lost, nothing doubled. A failover takes about a second, in which the
// workers finalize some fifty units on this machine; the build is large
// enough that both failovers end before it does.
func TestClusterFailoverMidBuild(t *testing.T) {
	const units, workers = 240, 4
	f := newFleet(t, "", unitNames(units))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	before := readWorkerCounters(t)
	run := f.start(ctx, workers, flakyFunc(80*time.Millisecond, everyNth(7)))

	for i, at := range []int64{10, 50} {
		f.waitFinalized(ctx, run, at)
		old := f.primary()
		start := time.Now()
		promoted, err := cl.Failover(ctx, old)
		require.NoError(t, err, "failover %d", i+1)
		require.NotEqual(t, old, promoted)
		require.Equal(t, promoted, f.primary())
		p, err := f.q.Progress(ctx)
		require.NoError(t, err)
		t.Logf("failover %d: slot %d from %s to its replica %s, from %d units finalized to %d of %d in %v",
			i+1, f.slot(), old, promoted, at, p.Finalized, p.Total, time.Since(start))
		require.Less(t, p.Finalized, p.Total, "the build ended before failover %d did", i+1)
	}

	requireWorkersOK(t, run)
	before.logSince(t, "workers")
	f.requireFinalizedOnce(f.suite.Units)
	f.requireOnOneNode()
	f.report(report.VerdictPassed)
}

// The primary of a build's slot dies (SIGKILL) while the build's workers
// run it; once the others mark it failed (cluster-node-timeout), its
// replica is promoted; later the old primary comes back, empty, as the new
// primary's replica. The workers' Timeout is longer than the outage: they
// must ride it out, not exit.
//
// Redis replicates asynchronously, so a commit the dead primary
// acknowledged may not have reached its replica. Each commit is one
// MULTI, lost whole or kept whole: a lost finalize leaves its unit pending
// under its worker, and another worker reclaims it after Timeout and runs
// it again. So the invariant holds even then: one finalized event per
// unit, finalized_count == total_units.
func TestClusterPrimaryKilledMidBuild(t *testing.T) {
	const units, workers = 60, 4
	f := newFleet(t, "", unitNames(units))
	f.timeout = 30 * time.Second // longer than the failover takes
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	before := readWorkerCounters(t)
	run := f.start(ctx, workers, flakyFunc(40*time.Millisecond, nil))

	f.waitFinalized(ctx, run, 15)
	old := f.primary()
	replicas, err := cl.ReplicasOf(ctx, old)
	require.NoError(t, err)
	require.NotEmpty(t, replicas)
	start := time.Now()
	require.NoError(t, cl.Kill(ctx, old))
	revived := false
	t.Cleanup(func() { // the next tests need every node
		if !revived {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cl.Revive(ctx, old); err != nil {
				t.Logf("reviving %s: %v", old, err)
			}
		}
	})
	promoted, err := cl.WaitPromoted(ctx, replicas)
	require.NoError(t, err)
	t.Logf("killed %s; its replica %s serves slot %d after %v", old, promoted, f.slot(), time.Since(start))
	require.NoError(t, cl.Revive(ctx, old))
	revived = true
	t.Logf("%s back as a replica after %v", old, time.Since(start))

	requireWorkersOK(t, run)
	before.logSince(t, "workers")
	f.requireFinalizedOnce(f.suite.Units)
	f.requireOnOneNode()
	f.report(report.VerdictPassed)
}
