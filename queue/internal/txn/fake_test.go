package txn

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"
)

// fakeConn is a dedicated connection with no server behind it: it records
// what is sent, one write at a time, and answers as reply says.
type fakeConn struct {
	b     rueidis.Builder
	reply func(cmds [][]string) []rueidis.RedisResult // nil: OK to all, EXEC applying
	sent  *[][]string                                 // each write, its commands joined by spaces
	mu    *sync.Mutex
	name  string
}

func (f *fakeConn) B() rueidis.Builder { return f.b }

func (f *fakeConn) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return f.DoMulti(ctx, cmd)[0]
}

func (f *fakeConn) DoMulti(_ context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	words := make([][]string, len(cmds))
	line := make([]string, len(cmds))
	for i, c := range cmds {
		words[i] = c.Commands()
		line[i] = strings.Join(words[i], " ")
	}
	f.mu.Lock()
	*f.sent = append(*f.sent, line)
	f.mu.Unlock()
	if f.reply != nil {
		return f.reply(words)
	}
	return applied(words)
}

// applied answers every command OK, and an EXEC with an OK for each
// command queued since MULTI.
func applied(cmds [][]string) []rueidis.RedisResult {
	res := make([]rueidis.RedisResult, len(cmds))
	queued := -1
	for i, c := range cmds {
		switch c[0] {
		case "MULTI":
			queued = 0
			res[i] = ok()
		case "EXEC":
			oks := make([]rueidis.RedisMessage, queued)
			for j := range oks {
				oks[j] = mock.RedisString("OK")
			}
			res[i], queued = mock.Result(mock.RedisArray(oks...)), -1
		default:
			if queued >= 0 {
				queued++
				res[i] = mock.Result(mock.RedisString("QUEUED"))
			} else {
				res[i] = ok()
			}
		}
	}
	return res
}

func ok() rueidis.RedisResult { return mock.Result(mock.RedisString("OK")) }

// replyEach answers cmds with each command's reply as of: a reply given
// for a command's name, else as applied would.
func replyEach(of map[string]rueidis.RedisResult) func([][]string) []rueidis.RedisResult {
	return func(cmds [][]string) []rueidis.RedisResult {
		res := applied(cmds)
		for i, c := range cmds {
			if r, ok := of[c[0]]; ok {
				res[i] = r
			}
		}
		return res
	}
}

// fakeEnv is a build as the runner sees it, counting what it is asked.
type fakeEnv struct {
	t         *testing.T
	b         rueidis.Builder
	mu        sync.Mutex
	sent      [][]string
	conns     []*fakeConn                                        // handed out by Dedicate, in order
	next      func(n int) func([][]string) []rueidis.RedisResult // the replies of the n-th connection
	addrs     []string                                           // Dedicate's addresses
	released  int
	applied   int
	retried   int
	aborted   int
	tokens    []string // ResolveOnce's
	resolveAs func(n int) (applied, done bool, err error)
}

func newFakeEnv(t *testing.T) *fakeEnv {
	return &fakeEnv{t: t, b: mock.NewClient(gomock.NewController(t)).B()}
}

func (e *fakeEnv) conn(name string, reply func([][]string) []rueidis.RedisResult) *fakeConn {
	return &fakeConn{b: e.b, reply: reply, sent: &e.sent, mu: &e.mu, name: name}
}

func (e *fakeEnv) Dedicate(addr string) (*fakeConn, func()) {
	e.mu.Lock()
	n := len(e.conns)
	e.addrs = append(e.addrs, addr)
	e.mu.Unlock()
	var reply func([][]string) []rueidis.RedisResult
	if e.next != nil {
		reply = e.next(n)
	}
	c := e.conn("pool", reply)
	e.mu.Lock()
	e.conns = append(e.conns, c)
	e.mu.Unlock()
	return c, func() { e.mu.Lock(); e.released++; e.mu.Unlock() }
}

func (e *fakeEnv) Record(cmds rueidis.Commands, c *fakeConn, t *Txn[string], guard string) rueidis.Commands {
	t.Records = append(t.Records, guard)
	return append(cmds, c.B().Zadd().Key(guard).ScoreMember().ScoreMember(float64(t.Now), t.Token).Build())
}

func (e *fakeEnv) Applied(t *Txn[string]) { e.applied++ }

func (e *fakeEnv) ResolveOnce(_ context.Context, _, token string) (bool, bool, error) {
	e.tokens = append(e.tokens, token)
	return e.resolveAs(len(e.tokens) - 1)
}

func (e *fakeEnv) WatchDropped(_ context.Context, err error) error { return err }
func (e *fakeEnv) Retried(context.Context, string)                 { e.retried++ }
func (e *fakeEnv) Aborted(context.Context, string)                 { e.aborted++ }

func (e *fakeEnv) runner() *Runner[*fakeConn, string] {
	return &Runner[*fakeConn, string]{Env: e, Policy: Policy{MaxAttempts: 5, BackoffFloor: 1, BackoffCeil: 10,
		ClusterWait: 50_000_000, ResolveWait: 50_000_000}}
}

// writes is an attempt that reads key k under the WATCH of g, then sets k.
func writes(tokens *[]string) Attempt[*fakeConn, string] {
	return func(ctx context.Context, c *fakeConn, t *Txn[string]) (rueidis.Commands, error) {
		if tokens != nil {
			*tokens = append(*tokens, t.Token)
		}
		res := c.DoMulti(ctx, c.B().Watch().Key("{b}:g").Build(), c.B().Get().Key("{b}:k").Build())
		if err := res[0].Error(); err != nil {
			return nil, err
		}
		t.Now = 1000
		return rueidis.Commands{c.B().Set().Key("{b}:k").Value("v").Build()}, nil
	}
}

// abortFirstExec is a fakeEnv.next whose first connection's EXEC aborts
// (a watched key changed) and whose later ones apply.
func abortFirstExec(n int) func([][]string) []rueidis.RedisResult {
	if n == 0 {
		return replyEach(map[string]rueidis.RedisResult{"EXEC": mock.Result(mock.RedisNil())})
	}
	return nil
}
