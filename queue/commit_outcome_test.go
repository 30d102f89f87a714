package queue

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quick is a Build's retry policy for tests: a few attempts, no wait.
var quick = Options{MaxAttempts: 3, BackoffFloor: time.Microsecond, BackoffCeil: 2 * time.Microsecond, ResolveWait: 50 * time.Millisecond}

// An EXEC that another transaction's write aborted is read and decided
// again, and commits.
func TestAbortedCommitIsDecidedAgain(t *testing.T) {
	r, b := heldUnitWith(t, quick)
	r.aborts = 2
	require.NoError(t, b.Heartbeat(context.Background(), w1u1))
	assert.Len(t, withPrefix(r.sentLines(), "MULTI"), 3, "decided at each attempt")
	assert.Len(t, r.committed(), 1)
}

// Past MaxAttempts aborts, a transition gives up: ErrContention, and
// nothing written.
func TestContentionBudgetExhausted(t *testing.T) {
	r, b := heldUnitWith(t, quick)
	r.aborts = quick.MaxAttempts
	err := b.Finalize(context.Background(), w1u1, Result{Outcome: "passed"})
	assert.ErrorIs(t, err, ErrContention)
	assert.Empty(t, r.committed())
}

// A commit whose reply was lost is resolved by its token in the worker's
// guard: found, it applied, and is not sent again.
func TestLostReplyFoundApplied(t *testing.T) {
	r, b := heldUnitWith(t, quick)
	r.lost = 1
	r.on("ZSCORE hopper:{b}:fence:worker:w1", mock.RedisString("1700000000500"))
	require.NoError(t, b.Heartbeat(context.Background(), w1u1))
	assert.Len(t, withPrefix(r.sentLines(), "XCLAIM"), 1, "sent once")
	assert.Len(t, withPrefix(r.sentLines(), "ZSCORE hopper:{b}:fence:worker:w1 "), 1)
}

// Not found, the resolution writes the guard in a transaction of its
// own, so that the lost commit can never apply later, and the
// transition starts over.
func TestLostReplyNotFoundFencedOff(t *testing.T) {
	r, b := heldUnitWith(t, quick)
	r.lost = 1
	require.NoError(t, b.Heartbeat(context.Background(), w1u1))
	commits := r.committed()
	require.Len(t, commits, 2)
	assert.Equal(t, "ZADD", commits[0][0][:4], "the resolution's own token: %q", commits[0])
	assert.Len(t, withPrefix(commits[0], "ZREMRANGEBYSCORE"), 1, "trimmed")
	assert.Equal(t, "XCLAIM", commits[1][0][:6], "then the heartbeat, decided again")
}

// A resolution that cannot look leaves the outcome unknown.
func TestLostReplyUnresolved(t *testing.T) {
	r, b := heldUnitWith(t, quick)
	r.lost = 1
	r.on("ZSCORE hopper:{b}:fence:worker:w1", mock.RedisError("ERR cannot look"))
	err := b.Heartbeat(context.Background(), w1u1)
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
}

// A worker's kept reads back its next transition's commit: the finalize
// after a heartbeat commits in one round trip.
func TestKeptReadsBackTheNextCommit(t *testing.T) {
	onDefaultEngine(t)
	r, b := heldUnit(t)
	ctx := context.Background()
	require.NoError(t, b.Heartbeat(ctx, w1u1))
	before := len(r.sentLines())
	require.NoError(t, b.Finalize(ctx, w1u1, Result{Outcome: "passed"}))
	sent := r.sentLines()[before:]
	assert.Equal(t, "MULTI", sent[0], "no reads of its own: %q", sent)
	assertFinalized(t, r.lastCommit())
}

// Kept reads never back a refusal: the finalize whose kept reads say it
// lost its entry, or that meta is gone, reads again and decides on what
// it reads then.
func TestKeptReadsNeverRefuse(t *testing.T) {
	onDefaultEngine(t)
	cases := []struct {
		name  string
		read  string // the read whose second reply, the kept one, refuses
		kept  rueidis.RedisMessage
		fresh rueidis.RedisMessage
		want  error
	}{
		{"stale, then held", "XPENDING " + replayKeys.Units, pendingReply(pendingAt{"1-0", "w2", 0, 2}),
			pendingReply(pendingAt{"1-0", "w1", 5, 1}), nil},
		{"stale, then stale", "XPENDING " + replayKeys.Units, pendingReply(), pendingReply(), ErrStale},
		{"meta gone, then there", "HEXISTS " + replayKeys.Meta, mock.RedisInt64(0), mock.RedisInt64(1), nil},
		{"meta gone, then gone", "HEXISTS " + replayKeys.Meta, mock.RedisInt64(0), mock.RedisInt64(0), ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, b := heldUnit(t)
			first := mock.Result(pendingReply(pendingAt{"1-0", "w1", 5, 1}))
			if c.read[0] == 'H' {
				first = mock.Result(mock.RedisInt64(1))
			}
			var n atomic.Int32
			r.onFunc(c.read, func([]string) rueidis.RedisResult {
				switch n.Add(1) {
				case 1:
					return first // the heartbeat's own
				case 2:
					return mock.Result(c.kept)
				}
				return mock.Result(c.fresh)
			})
			ctx := context.Background()
			require.NoError(t, b.Heartbeat(ctx, w1u1))
			err := b.Finalize(ctx, w1u1, Result{Outcome: "passed"})
			assert.Equal(t, int32(3), n.Load(), "read again")
			if c.want == nil {
				assert.NoError(t, err)
				assert.Len(t, r.committed(), 2)
				return
			}
			assert.ErrorIs(t, err, c.want)
			assert.Len(t, r.committed(), 1, "the heartbeat's alone")
		})
	}
}
