package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
)

// Many builds at once, spread over the three shards, each run whole by
// several workers through worker.Run and read back by report.Run: every
// build's keys stay in its slot on its primary, every unit is finalized
// exactly once.
func TestClusterManyBuilds(t *testing.T) {
	const perPrimary, units, workers = 3, 24, 3
	ids := idsOnEveryPrimary(t, perPrimary)
	slots := map[int]bool{}
	var fleets []*fleet
	for primary, list := range ids {
		for _, id := range list {
			f := newFleet(t, id, unitNames(units))
			require.Equal(t, primary, f.primary())
			slots[f.slot()] = true
			fleets = append(fleets, f)
		}
	}
	require.Len(t, ids, 3, "builds on every primary")
	require.Len(t, slots, 3*perPrimary, "distinct slots")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	var runs []*running
	for _, f := range fleets {
		runs = append(runs, f.start(ctx, workers, flakyFunc(10*time.Millisecond, everyNth(7))))
	}
	for _, run := range runs {
		requireWorkersOK(t, run)
	}
	t.Logf("%d builds of %d units, %d workers each, in %v", len(fleets), units, workers, time.Since(start))

	var finalized, requeued int
	for _, f := range fleets {
		types := f.requireFinalizedOnce(f.suite.Units)
		finalized += types[events.TypeFinalized]
		requeued += types[events.TypeRequeued]
		f.requireOnOneNode()
		r := f.report(report.VerdictPassed)
		assert.Equal(t, 0, r.ExitCode)
	}
	assert.Equal(t, len(fleets)*units, finalized)
	assert.Positive(t, requeued, "no flaky unit was requeued")
	t.Logf("finalized %d units, %d requeued once", finalized, requeued)
}
