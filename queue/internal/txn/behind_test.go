package txn

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rider carries keys' GETs (a WATCH first when watch) behind each commit,
// and keeps what it is handed.
type rider struct {
	watch   bool
	keys    []string
	carries int
	got     [][]string // the replies of each commit carried, as strings
	commits []error
	holds   bool
	conn    *fakeConn
	release func()
}

func (r *rider) Carry(c *fakeConn) rueidis.Commands {
	r.carries++
	var cmds rueidis.Commands
	if r.watch {
		cmds = append(cmds, c.B().Watch().Key(r.keys...).Build())
	}
	for _, k := range r.keys {
		cmds = append(cmds, c.B().Get().Key(k).Build())
	}
	return cmds
}

func (r *rider) Arrived(c *fakeConn, release func(), res []rueidis.RedisResult, commit error) bool {
	var got []string
	for _, x := range res {
		s, _ := x.ToString()
		got = append(got, s)
	}
	r.got, r.commits = append(r.got, got), append(r.commits, commit)
	if r.holds {
		r.conn, r.release = c, release
	}
	return r.holds
}

// getsAnswered answers each GET with its key's name.
func getsAnswered(cmds [][]string) []rueidis.RedisResult {
	res := applied(cmds)
	for i, c := range cmds {
		if c[0] == "GET" {
			res[i] = mock.Result(mock.RedisString("value of " + c[1]))
		}
	}
	return res
}

func TestBehindTheExecInTheSameWrite(t *testing.T) {
	e := newFakeEnv(t)
	e.next = func(int) func([][]string) []rueidis.RedisResult { return getsAnswered }
	chain := &rider{watch: true, keys: []string{"{b}:n"}, holds: true}
	empty := &rider{}
	ahead := &rider{keys: []string{"{b}:r1", "{b}:r2"}}
	var tokens []string
	l := Link[*fakeConn]{Behind: []Behind[*fakeConn]{chain, empty, ahead}}
	require.NoError(t, e.runner().Commit(context.Background(), "m", guard, l, writes(&tokens)))
	want := append(commitOf(tokens[0]), "WATCH {b}:n", "GET {b}:n", "GET {b}:r1", "GET {b}:r2")
	assert.Equal(t, [][]string{reads, want}, e.sent, "one write: the commit, then each rider's commands in order")
	assert.Equal(t, [][]string{{"OK", "value of {b}:n"}}, chain.got, "each its own replies")
	assert.Equal(t, [][]string{{"value of {b}:r1", "value of {b}:r2"}}, ahead.got)
	assert.Empty(t, empty.got, "nothing carried, nothing handed")
	assert.Equal(t, []error{nil}, chain.commits, "with the commit's outcome")
	assert.Zero(t, e.released, "the connection went on with the rider that holds it")
	require.NotNil(t, chain.release)
	chain.release()
	assert.Equal(t, 1, e.released)
}

func TestBehindEachCommitOfARetry(t *testing.T) {
	e := newFakeEnv(t)
	e.next = abortFirstExec
	ahead := &rider{keys: []string{"{b}:r"}}
	l := Link[*fakeConn]{Behind: []Behind[*fakeConn]{ahead}}
	require.NoError(t, e.runner().Commit(context.Background(), "m", guard, l, writes(nil)))
	assert.Equal(t, 2, ahead.carries, "asked again for the second commit")
	require.Len(t, ahead.commits, 2)
	assert.ErrorIs(t, ahead.commits[0], ErrAborted, "told the first commit aborted")
	assert.NoError(t, ahead.commits[1])
	assert.Equal(t, 2, e.released, "no rider held a connection")
}

func TestFromHeldConnection(t *testing.T) {
	e := newFakeEnv(t)
	first := []rueidis.RedisResult{ok(), mock.Result(mock.RedisString("read before"))}
	released := 0
	held := &Held[*fakeConn]{Conn: e.conn("held", nil), Release: func() { released++ }, Replies: first}
	var seen []rueidis.RedisResult
	err := e.runner().Commit(context.Background(), "m", guard, Link[*fakeConn]{From: held}, func(ctx context.Context, c *fakeConn, tx *Txn[string]) (rueidis.Commands, error) {
		assert.Equal(t, "held", c.name, "the first attempt runs on the held connection")
		seen = tx.First
		tx.Now = 1000
		return rueidis.Commands{c.B().Set().Key("{b}:k").Value("v").Build()}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, first, seen, "with the replies already made")
	assert.Empty(t, e.conns, "no connection taken from the pool")
	assert.Equal(t, 1, released)
	assert.Len(t, e.sent, 1, "one round trip: the commit")
}

func TestFromDroppedWhenNeverUsed(t *testing.T) {
	e := newFakeEnv(t)
	released := 0
	held := &Held[*fakeConn]{Conn: e.conn("held", nil), Release: func() { released++ }, Replies: []rueidis.RedisResult{ok()}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := e.runner().Commit(ctx, "m", guard, Link[*fakeConn]{From: held}, writes(nil))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, [][]string{{"UNWATCH"}}, e.sent, "given back disarmed")
	assert.Equal(t, 1, released)
}

func TestHeldArrivedNeedsEveryReply(t *testing.T) {
	e := newFakeEnv(t)
	var h Held[*fakeConn]
	c := e.conn("c", nil)
	assert.False(t, h.Arrived(c, func() {}, []rueidis.RedisResult{ok(), mock.ErrorResult(context.DeadlineExceeded)}))
	assert.Nil(t, h.Replies, "a lost reply: nothing held")
	h.Drop() // nothing to give back
	assert.Empty(t, e.sent)
	assert.True(t, h.Arrived(c, func() {}, []rueidis.RedisResult{ok(), mock.Result(mock.RedisError("ERR no"))}), "a reply of Redis is a reply")
}
