package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/fingerprint"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var fastJoin = queue.JoinOptions{InitTimeout: 10 * time.Second, PollInterval: 20 * time.Millisecond}

// manifestFor is what a worker computes for units under command.
func manifestFor(command string, units ...string) queue.Manifest {
	m := manifestOf(units...)
	m.Fingerprint = fingerprint.Of(fingerprint.Inputs{UnitIDs: units, UnitType: "file", Command: command, Revision: m.Revision})
	return m
}

func TestJoinManyWorkersAtOnce(t *testing.T) {
	l := newLifecycle(t)
	const n = 12
	m := manifestFor("go test {unit}", "./a", "./b", "./c")
	var (
		wg     sync.WaitGroup
		joined [n]queue.Joined
		errs   [n]error
		start  = make(chan struct{})
	)
	for i := range n {
		b := l.open() // each worker its own client, as separate processes
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			joined[i], errs[i] = b.Join(l.ctx, "ci-"+string(rune('a'+i)), m, fastJoin)
		}()
	}
	close(start)
	wg.Wait()

	publishers := 0
	for i := range n {
		require.NoError(t, errs[i], "worker %d", i)
		if joined[i].Published {
			publishers++
		}
		assert.True(t, joined[0].Manifest.Equal(joined[i].Manifest), "worker %d sees another manifest", i)
		assert.Equal(t, joined[0].ReadyAtMS, joined[i].ReadyAtMS)
	}
	assert.Equal(t, 1, publishers, "exactly one worker publishes")
	assert.Equal(t, []string{"./a", "./b", "./c"}, joined[0].Manifest.UnitIDs)
	assert.Equal(t, m.Fingerprint, joined[0].Manifest.Fingerprint)
	n3, err := l.do("XLEN", l.keys.Units).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 3, n3, "units queued once")
}

// A publisher that dies after taking the lease holds the build only until
// its lease expires; then another worker publishes.
func TestJoinAfterDeadPublisher(t *testing.T) {
	l := newLifecycle(t)
	_, won, err := l.build.TryLease(l.ctx, "dead", time.Second)
	require.NoError(t, err)
	require.True(t, won)

	start := time.Now()
	j, err := l.open().Join(l.ctx, "ci-2", manifestFor("x", "a", "b"), fastJoin)
	require.NoError(t, err)
	assert.True(t, j.Published, "the survivor publishes")
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "published before the dead lease expired")
	meta := l.hash(l.keys.Meta)
	assert.Regexp(t, `^ci-2:[0-9a-f]{16}$`, meta["publisher"])
	assert.Equal(t, "ready", meta["state"])
}

func TestJoinNeverInitialized(t *testing.T) {
	l := newLifecycle(t)
	_, _, err := l.build.TryLease(l.ctx, "stuck", time.Minute)
	require.NoError(t, err)
	l.requireUnchanged(func() {
		_, err := l.open().Join(l.ctx, "ci-2", manifestFor("x", "a"), queue.JoinOptions{
			InitTimeout: 300 * time.Millisecond, PollInterval: 50 * time.Millisecond,
		})
		require.ErrorIs(t, err, queue.ErrNeverInitialized)
		assert.Regexp(t, `build never initialized: build `+regexpQuote(l.id)+` \(waited 0s\)$`, err.Error())
	})
}

func TestJoinRefusesBurntBuild(t *testing.T) {
	for name, burn := range map[string]func(l *lifecycle){
		"tombstone only": func(l *lifecycle) {
			require.NoError(t, l.do("SET", l.keys.Exists, "1", "PX", "600000").Error())
		},
		"state expired after publishing": func(l *lifecycle) {
			_, err := l.build.Join(l.ctx, "ci-1", manifestFor("x", "a", "b"), fastJoin)
			require.NoError(t, err)
			for _, k := range []string{l.keys.Units, l.keys.Priority, l.keys.Meta, l.keys.UnitState, l.keys.Leader} {
				require.NoError(t, l.do("DEL", k).Error())
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := newLifecycle(t)
			burn(l)
			l.requireUnchanged(func() {
				_, err := l.open().Join(l.ctx, "ci-2", manifestFor("x", "a", "b"), fastJoin)
				require.ErrorIs(t, err, queue.ErrBuildBurnt)
				assert.Contains(t, err.Error(), "choose a new build id")
			})
		})
	}
}

func TestJoinRefusesFingerprintMismatch(t *testing.T) {
	l := newLifecycle(t)
	j, err := l.build.Join(l.ctx, "ci-1", manifestFor("go test {unit}", "./a", "./b"), fastJoin)
	require.NoError(t, err)
	require.True(t, j.Published)

	before := l.snapshot()
	other := manifestFor("go test -race {unit}", "./a", "./b")
	_, err = l.open().Join(l.ctx, "ci-2", other, fastJoin)
	var mismatch *queue.FingerprintMismatchError
	require.ErrorAs(t, err, &mismatch)
	require.ErrorIs(t, err, queue.ErrFingerprintMismatch)
	assert.Equal(t, []string{fingerprint.InputCommand}, mismatch.Inputs)
	assert.Equal(t, other.Fingerprint.Sum, mismatch.Local)
	assert.Equal(t, j.Manifest.Fingerprint.Sum, mismatch.Published)
	assert.Contains(t, err.Error(), "differing inputs: command")
	assert.Contains(t, err.Error(), mismatch.Local)
	assert.Contains(t, err.Error(), mismatch.Published)

	// The refusal is recorded, and nothing else is written (but the guard
	// that orders the worker's appends).
	evs := l.events()
	require.Len(t, evs, 1)
	assert.Equal(t, "worker_error", evs[0]["type"])
	assert.Equal(t, "ci-2", evs[0]["worker_id"])
	assert.Equal(t, "init", evs[0]["phase"])
	assert.Nil(t, evs[0]["unit_id"])
	assert.Equal(t, "queue.ErrFingerprintMismatch", evs[0]["class"])
	assert.Contains(t, evs[0]["message"], "differing inputs: command")
	after := l.snapshot()
	for k := range after {
		if k != l.keys.Attempts && !strings.Contains(k, ":fence:worker:ci-2") && before[k] != after[k] {
			t.Errorf("key %s changed:\n was %s\n now %s", k, before[k], after[k])
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("key %s disappeared", k)
		}
	}

	// Units in another order are another suite too.
	_, err = l.open().Join(l.ctx, "ci-3", manifestFor("go test {unit}", "./b", "./a"), fastJoin)
	require.ErrorAs(t, err, &mismatch)
	assert.Equal(t, []string{fingerprint.InputUnitIDs}, mismatch.Inputs)
}

func TestJoinInitFailed(t *testing.T) {
	l := newLifecycle(t)
	m := manifestFor("x", "a")
	m.LoadErrors = []string{"a: cannot parse"}
	_, err := l.build.Join(l.ctx, "ci-1", m, fastJoin)
	var failed *queue.InitFailedError
	require.ErrorAs(t, err, &failed, "the publisher fails too")
	assert.Equal(t, []string{"a: cannot parse"}, failed.LoadErrors)

	l.requireUnchanged(func() {
		_, err := l.open().Join(l.ctx, "ci-2", manifestFor("x", "a"), fastJoin)
		require.ErrorAs(t, err, &failed)
		require.ErrorIs(t, err, queue.ErrInitFailed)
		assert.Equal(t, l.id, failed.BuildID)
		assert.Equal(t, []string{"a: cannot parse"}, failed.LoadErrors)
	})
}

func TestJoinCancelled(t *testing.T) {
	l := newLifecycle(t)
	_, _, err := l.build.TryLease(l.ctx, "stuck", time.Minute)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = l.open().Join(ctx, "ci-2", manifestFor("x", "a"), fastJoin)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// Join's contract is ctx.Err() itself when ctx ends, whichever call it was
// making: here the first look at the build.
func TestJoinCancelledBeforeLooking(t *testing.T) {
	l := newLifecycle(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	l.requireUnchanged(func() {
		_, err := l.open().Join(ctx, "ci-2", manifestFor("x", "a"), fastJoin)
		assert.Equal(t, context.Canceled, err)
	})
}

// The init timeout bounds the wait even when the poll interval is longer:
// the last wait is cut at the deadline.
func TestJoinPollIntervalLongerThanInitTimeout(t *testing.T) {
	l := newLifecycle(t)
	_, _, err := l.build.TryLease(l.ctx, "stuck", time.Minute)
	require.NoError(t, err)
	start := time.Now()
	_, err = l.open().Join(l.ctx, "ci-2", manifestFor("x", "a"), queue.JoinOptions{
		InitTimeout: 300 * time.Millisecond, PollInterval: time.Minute,
	})
	require.ErrorIs(t, err, queue.ErrNeverInitialized)
	assert.Less(t, time.Since(start), 5*time.Second, "waited a poll interval past the init timeout")
}
