package integration

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// settleAll runs build b to completion as worker w: the units in failing
// are finalized failed, the others passed.
func settleAll(t testing.TB, l *lifecycle, b *queue.Build, w string, failing map[string]bool) {
	t.Helper()
	for {
		r, ok, err := b.Reserve(l.ctx, w, queue.ReserveOptions{Block: 10 * time.Millisecond})
		require.NoError(t, err)
		if !ok {
			p, err := b.Progress(l.ctx)
			require.NoError(t, err)
			if p.Complete() {
				return
			}
			continue
		}
		res := queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}
		if failing[r.UnitID] {
			res = queue.Result{Outcome: events.OutcomeFailed, Reason: events.ReasonTestFailure, DurationMS: 1}
		}
		require.NoError(t, b.Finalize(l.ctx, r, res))
	}
}

// Workers arriving at once at a complete build that failed, all retries
// (the job back under a new attempt, some with --retry-failed too), open
// exactly one round, holding exactly the failed units, with fresh
// keys, counts and budgets; its transitions log the round.
func TestRetryRoundOpensOnce(t *testing.T) {
	l := newLifecycle(t)
	units := []string{"u1", "u2", "u3", "u4"}
	_, err := l.build.Join(l.ctx, "w0", manifestOf(units...), queue.JoinOptions{})
	require.NoError(t, err)
	e, err := l.build.EnterRound(l.ctx, "w0", queue.RetrySignal{Slot: "gitlab:tests", Attempt: "1"})
	require.NoError(t, err)
	require.Equal(t, queue.Entered{Round: 1}, e, "the first attempt of the job works in round 1")
	settleAll(t, l, l.build, "w0", map[string]bool{"u2": true, "u4": true})

	const arriving = 8
	var wg sync.WaitGroup
	entered := make([]queue.Entered, arriving)
	errs := make([]error, arriving)
	for i := range arriving {
		wg.Go(func() {
			b := l.open()
			entered[i], errs[i] = b.EnterRound(l.ctx, "retry", queue.RetrySignal{Slot: "gitlab:tests", Attempt: "2", Force: i%2 == 0})
		})
	}
	wg.Wait()
	opened := 0
	for i := range arriving {
		require.NoError(t, errs[i])
		assert.Equal(t, 2, entered[i].Round, "every arriving worker works in round 2")
		if entered[i].Opened {
			opened++
			assert.Equal(t, []string{"u2", "u4"}, entered[i].Units)
		}
	}
	assert.Equal(t, 1, opened, "exactly one round opened")

	rk := queue.RoundKeys(l.id, 2)
	round, err := l.do("HGET", l.keys.Meta, "round").ToString()
	require.NoError(t, err)
	assert.Equal(t, "2", round)
	meta, err := l.do("HGETALL", rk.Meta).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, "2", meta["total_units"])
	assert.Equal(t, "0", meta["finalized_count"])
	assert.Equal(t, "0", meta["requeued_units_count"], "fresh budgets")
	assert.Equal(t, "2", meta["ci:gitlab:tests"])
	n, err := l.do("XLEN", rk.Units).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)

	rb, err := l.build.Round(2)
	require.NoError(t, err)
	settleAll(t, l, rb, "w1", nil)
	p, err := rb.Progress(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Progress{Finalized: 2, Total: 2}, p)
	base, err := l.build.Progress(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Progress{Finalized: 4, Total: 4}, base, "round 1's counts are its own")

	// The same attempt again, round 2 passed: no round 3.
	e, err = l.open().EnterRound(l.ctx, "late", queue.RetrySignal{Slot: "gitlab:tests", Attempt: "3"})
	require.NoError(t, err)
	assert.Equal(t, queue.Entered{Round: 2}, e)
	log, err := l.do("XRANGE", l.keys.Attempts, "-", "+").ToArray()
	require.NoError(t, err)
	var rounds []int
	for _, entry := range log {
		kv, err := entry.ToArray()
		require.NoError(t, err)
		fields, err := kv[1].AsStrMap()
		require.NoError(t, err)
		ev, err := events.Decode([]byte(fields["json"]))
		require.NoError(t, err)
		if ev.Type == events.TypeFinalized {
			rounds = append(rounds, ev.RoundOf())
		}
		if ev.Type == events.TypeRoundOpened {
			assert.Equal(t, []string{"u2", "u4"}, ev.UnitIDs)
		}
	}
	assert.Equal(t, []int{1, 1, 1, 1, 2, 2}, rounds, "one finalized per unit per round, each with its round")
}

// Without a retry signal, a worker arriving at a complete failed build
// opens nothing: the build runs nothing, as before rounds.
func TestNoRetryOpensNoRound(t *testing.T) {
	l := newLifecycle(t)
	_, err := l.build.Join(l.ctx, "w0", manifestOf("u1"), queue.JoinOptions{})
	require.NoError(t, err)
	settleAll(t, l, l.build, "w0", map[string]bool{"u1": true})
	for _, sig := range []queue.RetrySignal{{}, {Slot: "gitlab:other", Attempt: "9"}} {
		e, err := l.open().EnterRound(l.ctx, "w1", sig)
		require.NoError(t, err)
		assert.Equal(t, queue.Entered{Round: 1}, e)
	}
	assert.False(t, l.exists(queue.RoundKeys(l.id, 2).Meta))
}
