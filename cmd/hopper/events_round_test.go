package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
)

// finishAs settles every unit of b as worker w, failing those in failing.
func finishAs(t *testing.T, b *queue.Build, w string, failing map[string]bool) {
	t.Helper()
	ctx := ctxTimeout(t, time.Minute)
	for {
		r, ok, err := b.Reserve(ctx, w, queue.ReserveOptions{Block: time.Millisecond})
		require.NoError(t, err)
		if !ok {
			return
		}
		res := queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}
		if failing[r.UnitID] {
			res = queue.Result{Outcome: events.OutcomeFailed, Reason: events.ReasonTestFailure, DurationMS: 1}
		}
		require.NoError(t, b.Finalize(ctx, r, res))
	}
}

// `events --follow` on a build whose retry round runs follows it until
// the round is complete, not only until the first round was.
func TestEventsFollowARetryRound(t *testing.T) {
	url, build := redisURL(t), redistest.BuildID(t)
	ctx := ctxTimeout(t, time.Minute)
	c := srv.Client(t)
	b, err := queue.Open(c, build, queue.Options{})
	require.NoError(t, err)
	_, err = b.Join(ctx, "w1", queue.Manifest{UnitIDs: []string{"a", "b"}}, queue.JoinOptions{})
	require.NoError(t, err)
	finishAs(t, b, "w1", map[string]bool{"b": true})
	e, err := b.EnterRound(ctx, "w2", queue.RetrySignal{Force: true})
	require.NoError(t, err)
	require.Equal(t, queue.Entered{Round: 2, Opened: true, Units: []string{"b"}}, e)

	follow := start(t, t.TempDir(), baseEnv(), "events", "--build", build, "--redis", url, "--follow")
	followsRoundTwoToItsEnd(t, follow, b)
}

// `events --follow` that judged round 1 complete and then, reading the log,
// finds the round_opened of a round opened in between follows that round
// to its end: a proxy holds the follower's read of the log, after its look
// at meta, while round 2 opens.
func TestEventsFollowARoundOpenedWhileFollowing(t *testing.T) {
	build := redistest.BuildID(t)
	redisURL(t) // creates the binary's user
	proxy := newReadProxy(t, srv.Addr(), "HMGET", "XRANGE")
	url := "redis://" + redistest.NoScriptUser + ":" + redistest.NoScriptUser + "@" + proxy.addr()
	ctx := ctxTimeout(t, time.Minute)
	b, err := queue.Open(srv.Client(t), build, queue.Options{})
	require.NoError(t, err)
	_, err = b.Join(ctx, "w1", queue.Manifest{UnitIDs: []string{"a", "b"}}, queue.JoinOptions{})
	require.NoError(t, err)
	r, ok, err := b.Reserve(ctx, "w1", queue.ReserveOptions{Block: time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)

	follow := start(t, t.TempDir(), baseEnv(), "events", "--build", build, "--redis", url, "--follow")
	require.Eventually(t, func() bool { return strings.Contains(follow.stdout.String(), `"delivered"`) },
		10*time.Second, 20*time.Millisecond, "the follower printed the log so far")
	require.NoError(t, b.Finalize(ctx, r, queue.Result{Outcome: events.OutcomeFailed, Reason: events.ReasonTestFailure, DurationMS: 1}))
	finishAs(t, b, "w1", nil) // round 1 is complete, b failed
	proxy.arm()
	select {
	case <-proxy.held: // the follower saw round 1 complete; its log read waits
	case <-time.After(10 * time.Second):
		t.Fatalf("the follower never read the log after round 1 completed:\n%s%s", follow.stdout, follow.stderr)
	}
	_, err = b.EnterRound(ctx, "w2", queue.RetrySignal{Force: true})
	close(proxy.release)
	require.NoError(t, err)

	followsRoundTwoToItsEnd(t, follow, b)
}

// followsRoundTwoToItsEnd checks that follow, following b while its round 2
// runs, is still running, then ends once round 2 is finished, having
// printed round 1's two finalized events, round 2's one and the round's
// opening.
func followsRoundTwoToItsEnd(t *testing.T, follow *proc, b *queue.Build) {
	t.Helper()
	time.Sleep(700 * time.Millisecond)
	select {
	case <-follow.done:
		t.Fatalf("--follow ended while round 2 ran:\n%s%s", follow.stdout, follow.stderr)
	default:
	}
	rb, err := b.Round(2)
	require.NoError(t, err)
	finishAs(t, rb, "w2", nil)
	require.Equal(t, 0, follow.wait(10*time.Second), follow.stderr.String())
	evs := decodeLines(t, follow.stdout.String())
	assert.Equal(t, 3, countEvents(evs, "finalized", ""), "round 1's two and round 2's one")
	assert.Equal(t, 1, countEvents(evs, "round_opened", ""))
}

// `events --follow` of a build whose meta names a round that is not a
// round number ends, naming the value (exit 2), as `hopper status` does
// (queue.MetaRound): read as round 1, a running build would be followed
// as if the round were not there. The log read before is printed.
func TestEventsFollowEndsOnAMalformedRound(t *testing.T) {
	url, build, c, ctx := runningBuild(t)
	k := queue.BuildKeys(build)
	require.NoError(t, c.Do(ctx, c.B().Hset().Key(k.Meta).FieldValue().FieldValue("round", "two").Build()).Error())

	follow := start(t, t.TempDir(), baseEnv(), "events", "--build", build, "--redis", url, "--follow")
	code := follow.wait(10 * time.Second)
	assert.Equalf(t, 2, code, "got exit code %d, want 2 (the build is corrupt); stderr: %s", code, follow.stderr)
	assert.Contains(t, follow.stderr.String(), `meta round "two" is not a round number`)
	assert.Equal(t, 1, strings.Count(follow.stdout.String(), `"type":"delivered"`), "got stdout %q, want the delivered event", follow.stdout)

	code, _, errs := hopper(t, t.TempDir(), baseEnv(), "status", "--build", build, "--redis", url, "--once")
	assert.Equalf(t, 2, code, "status: got exit code %d, want 2; stderr: %s", code, errs)
	assert.Contains(t, errs, `meta round "two" is not a round number`, "status says the same")
}
