package txn

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const guard = "{b}:w"

var reads = []string{"WATCH {b}:g", "GET {b}:k"}

func commitOf(token string) []string {
	return []string{"MULTI", "SET {b}:k v", "ZADD " + guard + " 1000 " + token, "EXEC"}
}

func TestCommitApplied(t *testing.T) {
	e := newFakeEnv(t)
	var tokens []string
	require.NoError(t, e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, writes(&tokens)))
	require.Len(t, tokens, 1)
	assert.Equal(t, [][]string{reads, commitOf(tokens[0])}, e.sent)
	assert.Equal(t, 1, e.applied)
	assert.Equal(t, 1, e.released, "the connection goes back once")
	assert.Zero(t, e.retried)
}

func TestCommitAbortedIsTriedAgain(t *testing.T) {
	e := newFakeEnv(t)
	e.next = abortFirstExec
	var tokens []string
	require.NoError(t, e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, writes(&tokens)))
	require.Len(t, tokens, 2)
	assert.NotEqual(t, tokens[0], tokens[1], "each attempt has its own token")
	assert.Equal(t, [][]string{reads, commitOf(tokens[0]), reads, commitOf(tokens[1])}, e.sent)
	assert.Equal(t, 1, e.applied, "only the commit that applied counts")
	assert.Equal(t, 1, e.retried)
	assert.Equal(t, 1, e.aborted)
	assert.Equal(t, 2, e.released)
	assert.Len(t, e.conns, 2, "a fresh connection for the second attempt")
}

func TestCommitGivesUpAfterMaxAttempts(t *testing.T) {
	e := newFakeEnv(t)
	e.next = func(int) func([][]string) []rueidis.RedisResult {
		return replyEach(map[string]rueidis.RedisResult{"EXEC": mock.Result(mock.RedisNil())})
	}
	err := e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, writes(nil))
	assert.ErrorIs(t, err, ErrContention)
	assert.Len(t, e.conns, 5, "MaxAttempts")
}

// lostExec loses the replies of the first commit with the connection.
func lostExec(n int) func([][]string) []rueidis.RedisResult {
	if n > 0 {
		return nil
	}
	return func(cmds [][]string) []rueidis.RedisResult {
		if cmds[0][0] != "MULTI" {
			return applied(cmds)
		}
		res := make([]rueidis.RedisResult, len(cmds))
		for i := range res {
			res[i] = mock.ErrorResult(io.EOF)
		}
		return res
	}
}

func TestLostReplyResolvedApplied(t *testing.T) {
	e := newFakeEnv(t)
	e.next = lostExec
	e.resolveAs = func(int) (bool, bool, error) { return true, true, nil }
	var tokens []string
	require.NoError(t, e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, writes(&tokens)))
	assert.Equal(t, tokens, e.tokens, "resolved by the lost commit's token")
	assert.Len(t, tokens, 1, "applied: not tried again")
	assert.Zero(t, e.applied, "its records are not known applied")
}

func TestLostReplyResolvedNotApplied(t *testing.T) {
	e := newFakeEnv(t)
	e.next = lostExec
	e.resolveAs = func(n int) (bool, bool, error) {
		if n == 0 {
			return false, false, io.EOF // not answered: looks again
		}
		return false, true, nil
	}
	var tokens []string
	require.NoError(t, e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, writes(&tokens)))
	require.Len(t, tokens, 2, "not applied: tried again, as if aborted")
	assert.Equal(t, []string{tokens[0], tokens[0]}, e.tokens)
	assert.Equal(t, 1, e.applied)
	assert.Equal(t, 1, e.aborted)
}

func TestLostReplyUnresolved(t *testing.T) {
	e := newFakeEnv(t)
	e.next = lostExec
	e.resolveAs = func(int) (bool, bool, error) { return false, false, io.ErrUnexpectedEOF }
	err := e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, writes(nil))
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.ErrorContains(t, err, io.ErrUnexpectedEOF.Error())
	assert.Greater(t, len(e.tokens), 1, "it kept trying for ResolveWait")
}

func TestNothingToCommit(t *testing.T) {
	e := newFakeEnv(t)
	err := e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, func(ctx context.Context, c *fakeConn, t *Txn[string]) (rueidis.Commands, error) {
		c.DoMulti(ctx, c.B().Watch().Key("{b}:g").Build())
		return nil, nil
	})
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"WATCH {b}:g"}, {"UNWATCH"}}, e.sent, "disarmed before going back")
	assert.Equal(t, 1, e.released)
}

func TestRefusalAfterTheWatch(t *testing.T) {
	e := newFakeEnv(t)
	refused := errors.New("stale")
	err := e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, func(ctx context.Context, c *fakeConn, t *Txn[string]) (rueidis.Commands, error) {
		c.DoMulti(ctx, c.B().Watch().Key("{b}:g").Build())
		return nil, refused
	})
	assert.ErrorIs(t, err, refused)
	assert.Equal(t, [][]string{{"WATCH {b}:g"}, {"UNWATCH"}}, e.sent)
}

func TestFinalDecisionUnwatched(t *testing.T) {
	e := newFakeEnv(t)
	refused := errors.New("stale")
	err := e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, func(ctx context.Context, c *fakeConn, t *Txn[string]) (rueidis.Commands, error) {
		c.DoMulti(ctx, c.B().Get().Key("{b}:k").Build())
		return nil, Unwatched{Err: refused}
	})
	assert.ErrorIs(t, err, refused)
	assert.Equal(t, [][]string{{"GET {b}:k"}}, e.sent, "no UNWATCH when nothing was watched")
	assert.Equal(t, 1, e.released)
}

func TestNoServerTimeSendsNothing(t *testing.T) {
	e := newFakeEnv(t)
	err := e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, func(ctx context.Context, c *fakeConn, t *Txn[string]) (rueidis.Commands, error) {
		return rueidis.Commands{c.B().Set().Key("{b}:k").Value("v").Build()}, nil
	})
	assert.ErrorIs(t, err, ErrNoServerTime)
	assert.Equal(t, [][]string{{"UNWATCH"}}, e.sent)
}

func TestCancelledBetweenReadsAndCommitSendsNothing(t *testing.T) {
	e := newFakeEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	read := writes(nil)
	err := e.runner().Commit(ctx, "m", guard, Link[*fakeConn]{}, func(ctx context.Context, c *fakeConn, t *Txn[string]) (rueidis.Commands, error) {
		w, err := read(ctx, c, t)
		cancel()
		return w, err
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, [][]string{reads, {"UNWATCH"}}, e.sent, "no MULTI, no EXEC")
	assert.Zero(t, e.applied)
	assert.Empty(t, e.tokens, "nothing to resolve")
}

func TestMovedGoesToTheNodeItNames(t *testing.T) {
	e := newFakeEnv(t)
	e.next = func(n int) func([][]string) []rueidis.RedisResult {
		if n == 0 {
			return replyEach(map[string]rueidis.RedisResult{"WATCH": mock.Result(mock.RedisError("MOVED 1234 10.0.0.2:7001"))})
		}
		return nil
	}
	require.NoError(t, e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, writes(nil)))
	assert.Equal(t, []string{"", "10.0.0.2:7001"}, e.addrs)
}

func TestFinalKeepsTheConnectionOfNothingToCommit(t *testing.T) {
	e := newFakeEnv(t)
	var kept *fakeConn
	final := func(c *fakeConn, release func()) bool { kept = c; return true }
	err := e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{Final: final}, func(ctx context.Context, c *fakeConn, t *Txn[string]) (rueidis.Commands, error) {
		c.DoMulti(ctx, c.B().Watch().Key("{b}:g").Build())
		return nil, nil
	})
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"WATCH {b}:g"}}, e.sent, "still watching: no UNWATCH")
	assert.Zero(t, e.released, "Final holds it")
	assert.Same(t, e.conns[0], kept)
}

func TestFinalDeclinedOrNotOffered(t *testing.T) {
	refused := errors.New("stale")
	watchThen := func(err error) Attempt[*fakeConn, string] {
		return func(ctx context.Context, c *fakeConn, t *Txn[string]) (rueidis.Commands, error) {
			c.DoMulti(ctx, c.B().Watch().Key("{b}:g").Build())
			return nil, err
		}
	}
	for name, tc := range map[string]struct {
		holds bool
		try   Attempt[*fakeConn, string]
		err   error
		asked int
		sent  [][]string
	}{
		"declined":          {try: watchThen(nil), asked: 1, sent: [][]string{{"WATCH {b}:g"}, {"UNWATCH"}}},
		"not for a refusal": {holds: true, try: watchThen(refused), err: refused, sent: [][]string{{"WATCH {b}:g"}, {"UNWATCH"}}},
		"not for a commit":  {holds: true, try: writes(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			e := newFakeEnv(t)
			asked := 0
			final := func(*fakeConn, func()) bool { asked++; return tc.holds }
			err := e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{Final: final}, tc.try)
			assert.ErrorIs(t, err, tc.err)
			assert.Equal(t, tc.asked, asked, "Final asked")
			assert.Equal(t, 1, e.released, "given back")
			if tc.sent != nil {
				assert.Equal(t, tc.sent, e.sent)
			}
		})
	}
}

// An attempt may append its writes to Txn.Writes, MULTI first: the commit
// sent is the same as when the runner wraps them, on every attempt.
func TestWritesBegunByTheAttempt(t *testing.T) {
	e := newFakeEnv(t)
	e.next = abortFirstExec
	var tokens []string
	plain := writes(&tokens)
	begun := func(ctx context.Context, c *fakeConn, t *Txn[string]) (rueidis.Commands, error) {
		w, err := plain(ctx, c, t)
		if err != nil {
			return nil, err
		}
		return append(t.Writes(c.B(), len(w)), w...), nil
	}
	require.NoError(t, e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{}, begun))
	require.Len(t, tokens, 2)
	assert.Equal(t, [][]string{reads, commitOf(tokens[0]), reads, commitOf(tokens[1])}, e.sent)
	assert.Equal(t, 1, e.applied)
}
