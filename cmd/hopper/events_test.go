package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
)

// runningBuild publishes a build of units a and b, w1 holding one: its log
// has one event, and it is far from complete. It returns the URL to reach
// it, its id, a client and a context for the test.
func runningBuild(t *testing.T) (url, build string, c rueidis.Client, ctx context.Context) {
	t.Helper()
	url, build = redisURL(t), redistest.BuildID(t)
	ctx = ctxTimeout(t, time.Minute)
	c = srv.Client(t)
	b, err := queue.Open(c, build, queue.Options{})
	require.NoError(t, err)
	_, err = b.Join(ctx, "w1", queue.Manifest{UnitIDs: []string{"a", "b"}}, queue.JoinOptions{})
	require.NoError(t, err)
	_, ok, err := b.Reserve(ctx, "w1", queue.ReserveOptions{Block: time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)
	return url, build, c, ctx
}

// A build whose state expires (or is evicted) while `events --follow`
// watches it can never complete: following must end, saying so, not wait
// for ever. Its state goes as expiry takes it: every live key, the
// tombstone left.
func TestEventsFollowEndsWhenTheBuildIsGone(t *testing.T) {
	url, build, c, ctx := runningBuild(t)

	follow := start(t, t.TempDir(), baseEnv(), "events", "--build", build, "--redis", url, "--follow")
	require.Eventually(t, func() bool { return strings.Contains(follow.stdout.String(), `"type":"delivered"`) },
		10*time.Second, 20*time.Millisecond, "got stdout %q, want the delivered event", follow.stdout)

	k := queue.BuildKeys(build)
	require.NoError(t, c.Do(ctx, c.B().Del().Key(k.Units, k.Priority, k.Attempts, k.Meta, k.UnitState, k.Workers).Build()).Error())
	code := follow.wait(10 * time.Second)
	assert.Equalf(t, 3, code, "got exit code %d, want 3 (the build can no longer complete); stderr: %s", code, follow.stderr)
	assert.Contains(t, follow.stderr.String(), "hopper events: build "+build+" is gone")
	assert.Equal(t, 1, strings.Count(follow.stdout.String(), "\n"), "got stdout %q, want the one event printed once", follow.stdout)

	// Without --follow, the same: not an empty log that reads as fine.
	code, out, errs := hopper(t, t.TempDir(), baseEnv(), "events", "--build", build, "--redis", url)
	assert.Equalf(t, 3, code, "got exit code %d, want 3; stderr: %s", code, errs)
	assert.Empty(t, out)
	assert.Contains(t, errs, "hopper events: build "+build+" is gone")
}

// -f is --follow's short form, and takes a value as --follow does: -f=false
// prints the log and ends, as --follow=false does, instead of following a
// build that is still running; -f=maybe is refused as --follow=maybe is.
func TestEventsShortFollowTakesItsValue(t *testing.T) {
	url, build, _, _ := runningBuild(t)

	for _, flag := range []string{"--follow=false", "-f=false"} {
		p := start(t, t.TempDir(), baseEnv(), "events", "--build", build, "--redis", url, flag)
		code := p.wait(10 * time.Second)
		assert.Equalf(t, 0, code, "%s: got exit code %d, want 0; stderr: %s", flag, code, p.stderr)
		assert.Equalf(t, 1, strings.Count(p.stdout.String(), `"type":"delivered"`), "%s: got stdout %q, want the delivered event", flag, p.stdout)
	}
	for _, flag := range []string{"--follow=maybe", "-f=maybe"} {
		code, out, errs := hopper(t, t.TempDir(), baseEnv(), "events", "--build", build, "--redis", url, flag)
		assert.Equalf(t, 2, code, "%s: got exit code %d, want 2; stderr: %s", flag, code, errs)
		assert.Emptyf(t, out, "%s: got stdout %q, want nothing", flag, out)
		assert.Containsf(t, errs, `"maybe"`, "%s: got stderr %q, want the bad value named", flag, errs)
	}
}

// A ready build whose meta counts are not counts can never be seen
// complete: `events --follow` ends naming the bad value (exit 2), where it
// would otherwise follow for ever. The log read before is printed.
func TestEventsFollowEndsOnCorruptCounts(t *testing.T) {
	for _, field := range []string{"total_units", "finalized_count"} {
		t.Run(field, func(t *testing.T) {
			url, build, c, ctx := runningBuild(t)
			k := queue.BuildKeys(build)
			require.NoError(t, c.Do(ctx, c.B().Hset().Key(k.Meta).FieldValue().FieldValue(field, "lots").Build()).Error())

			follow := start(t, t.TempDir(), baseEnv(), "events", "--build", build, "--redis", url, "--follow")
			code := follow.wait(10 * time.Second)
			assert.Equalf(t, 2, code, "got exit code %d, want 2 (the build is corrupt); stderr: %s", code, follow.stderr)
			assert.Contains(t, follow.stderr.String(), field+` "lots" is not a count`)
			assert.Equal(t, 1, strings.Count(follow.stdout.String(), `"type":"delivered"`), "got stdout %q, want the delivered event", follow.stdout)
		})
	}
}
