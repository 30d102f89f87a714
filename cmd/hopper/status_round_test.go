package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
)

// `hopper status` of a build whose retry round runs shows that round: its
// counts, its state, which round it is and its workers; round 1's figures
// (three units, one failed) are no longer the build's status.
func TestStatusShowsTheLatestRound(t *testing.T) {
	url, build := redisURL(t), redistest.BuildID(t)
	ctx := ctxTimeout(t, time.Minute)
	b, err := queue.Open(srv.Client(t), build, queue.Options{})
	require.NoError(t, err)
	_, err = b.Join(ctx, "w1", queue.Manifest{UnitIDs: []string{"a", "b", "c"}}, queue.JoinOptions{})
	require.NoError(t, err)
	finishAs(t, b, "w1", map[string]bool{"b": true})
	status := func() string {
		t.Helper()
		code, out, errs := hopper(t, t.TempDir(), baseEnv(), "status", "--build", build, "--redis", url, "--once")
		require.Equal(t, 0, code, errs)
		return out
	}
	out := status()
	assert.Contains(t, out, "build "+build+": complete, 3 of 3 units finalized (100%)", "round 1 alone: as ever")
	assert.Contains(t, out, "passed 2, failed 1,")

	_, err = b.EnterRound(ctx, "w2", queue.RetrySignal{Force: true})
	require.NoError(t, err)
	out = status()
	assert.Contains(t, out, "build "+build+": running, round 2 of 2, 0 of 1 units finalized (0%)")
	assert.Contains(t, out, "passed 0, failed 0, flaky 0, retrying 0")
	assert.NotContains(t, out, "failed: b", "round 1's failure is not the round's")
	assert.NotRegexp(t, `(?m)^w1\s`, out, "round 1's worker did not work in round 2")

	rb, err := b.Round(2)
	require.NoError(t, err)
	finishAs(t, rb, "w2", nil)
	out = status()
	assert.Contains(t, out, "build "+build+": complete, round 2 of 2, 1 of 1 units finalized (100%)")
	assert.Contains(t, out, "passed 1, failed 0, flaky 0, retrying 0")
	assert.Regexp(t, `(?m)^w2\s+\S+ ago\s+-\s+1$`, out, "the round's worker, one unit processed")
}
