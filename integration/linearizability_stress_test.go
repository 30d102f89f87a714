package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinearizableTransitions records every transition of a stress run on
// one build (goroutine workers, a reclaim timeout of a few milliseconds so
// that ownership keeps moving, heartbeats racing settlements) and checks the
// history with porcupine against the sequential model of
// linearizability_model_test.go: there must be one order of the calls,
// each taking effect at one instant between its call and its return, in
// which every reply is the one the model gives. The same run's log must hold
// exactly the events of the calls that were applied, and the build's state
// must agree with it (checkSettledOnce).
//
// Each round is one build and one history; HOPPER_LIN_ROUNDS (default 4)
// runs more. The model is checked against planted defects too, so that a
// pass means something (see linearizabilityControls). Built with -tags
// hopper_unfenced (transitions that do not watch the entry guards) the
// histories stop being linearizable.
func TestLinearizableTransitions(t *testing.T) {
	const (
		units   = 48
		workers = 8
	)
	rounds := 4
	if n, err := strconv.Atoi(os.Getenv("HOPPER_LIN_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	total := 0
	for round := 1; round <= rounds; round++ {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			e := newEnv(t)
			budgets := linBudgets{maxRequeues: 3, maxReclaims: 3}
			ids, initial := linBuild(t, e, units, budgets)
			d := &linDriver{e: e, build: e.build, reads: e.client, rec: newLinRecorder(initial), budgets: budgets, timeout: 3 * time.Millisecond}

			ctx, cancel := context.WithTimeout(e.ctx, 90*time.Second)
			defer cancel()
			start := time.Now()
			require.NoError(t, d.run(ctx, workers))
			ran := time.Since(start)

			history := d.rec.history()
			t.Logf("history: %s (run %v)", linStats(history), ran.Round(time.Millisecond))
			start = time.Now()
			res := d.check(t, history)
			t.Logf("porcupine: %s in %v", res, time.Since(start).Round(time.Millisecond))
			require.Equal(t, porcupine.Ok, res, "the history is not linearizable")
			assert.Zero(t, d.rec.unknown.Load(), "calls whose outcome stayed unknown")
			assert.Zero(t, d.notApplied.Load(), "calls that failed")
			d.requireLogMatchesCalls(t)
			checkSettledOnce(t, e, ids)
			assert.GreaterOrEqual(t, d.linearizabilityControls(t, history), 3, "negative controls run")
			total += len(history)
		})
	}
	t.Logf("figures: histories_checked=%d operations=%d", rounds, total)
}
