package queue

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"
)

// replay is a Redis that is not there: every command gets the reply
// recorded for it, and what was sent is kept, so that a transition's
// decision can be checked without a server. A reply is recorded for a
// prefix of the command's words joined by spaces; the latest recorded
// for a command wins, and commands with none get what an empty build
// would answer (see fallback). It is a rueidis.Client whose dedicated
// connections share it.
type replay struct {
	rueidis.Client // unused methods: calling one panics
	b              rueidis.Builder

	mu      sync.Mutex
	replies []recordedReply
	sent    []string   // every command, in order
	commits [][]string // the commands of each MULTI whose EXEC applied
	applied [][]string // the words of every command an EXEC applied
	aborts  int        // EXECs still to abort (a nil reply)
	lost    int        // EXECs still to lose with the connection, unapplied
}

type recordedReply struct {
	prefix string
	reply  func(words []string) rueidis.RedisResult
}

// onDefaultEngine marks a test of the default engine's machinery (kept
// reads and watches, read-ahead, batches, what a Build remembers): it
// runs on that engine whatever HOPPER_ENGINE says. The other replayed
// tests are of decisions, which both engines take alike.
func onDefaultEngine(t *testing.T) { t.Setenv(engineEnv, string(EngineDefault)) }

// buildID is the build every replayed test runs.
const buildID = "b"

func newReplay(t *testing.T) *replay {
	return &replay{b: mock.NewClient(gomock.NewController(t)).B()}
}

// on records msg as the reply of every command starting with prefix.
func (r *replay) on(prefix string, msg rueidis.RedisMessage) *replay {
	return r.onResult(prefix, mock.Result(msg))
}

// onResult records res, which may be an error, for prefix.
func (r *replay) onResult(prefix string, res rueidis.RedisResult) *replay {
	return r.onFunc(prefix, func([]string) rueidis.RedisResult { return res })
}

// onFunc answers the commands starting with prefix as fn says.
func (r *replay) onFunc(prefix string, fn func(words []string) rueidis.RedisResult) *replay {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replies = append(r.replies, recordedReply{prefix, fn})
	return r
}

// answer is the reply to one command outside MULTI.
func (r *replay) answer(words []string) rueidis.RedisResult {
	line := strings.Join(words, " ")
	r.mu.Lock()
	var fn func([]string) rueidis.RedisResult
	for i := len(r.replies) - 1; i >= 0; i-- {
		if strings.HasPrefix(line, r.replies[i].prefix) {
			fn = r.replies[i].reply
			break
		}
	}
	r.mu.Unlock()
	if fn != nil {
		return fn(words)
	}
	return fallback(words)
}

// serverTimeMS is the time every unrecorded TIME tells, in epoch ms.
const serverTimeMS = 1_700_000_000_500

// fallback answers as a build with nothing in it: no field, no pending
// entry, no stream, and OK to every write.
func fallback(words []string) rueidis.RedisResult {
	switch words[0] {
	case "TIME":
		return mock.Result(mock.RedisArray(mock.RedisString("1700000000"), mock.RedisString("500000")))
	case "HMGET":
		nils := make([]rueidis.RedisMessage, len(words)-2)
		for i := range nils {
			nils[i] = mock.RedisNil()
		}
		return mock.Result(mock.RedisArray(nils...))
	case "HGET", "GET", "XREADGROUP", "ZSCORE":
		return mock.Result(mock.RedisNil())
	case "HEXISTS", "EXISTS":
		return mock.Result(mock.RedisInt64(0))
	case "XPENDING", "XRANGE", "XREVRANGE", "ZRANGE", "ZRANGEBYSCORE", "HGETALL":
		return mock.Result(mock.RedisArray())
	case "XINFO":
		return mock.Result(mock.RedisError("ERR no such key"))
	}
	return mock.Result(mock.RedisString("OK"))
}

// do answers cmds, sent in one write: MULTI queues what follows it, and
// EXEC applies it (or aborts, while aborts lasts).
func (r *replay) do(cmds []rueidis.Completed) []rueidis.RedisResult {
	res := make([]rueidis.RedisResult, len(cmds))
	var queued [][]string
	inMulti := false
	for i, cmd := range cmds {
		words := cmd.Commands()
		line := strings.Join(words, " ")
		r.mu.Lock()
		r.sent = append(r.sent, line)
		r.mu.Unlock()
		switch {
		case words[0] == "MULTI":
			inMulti, queued = true, nil
			res[i] = mock.Result(mock.RedisString("OK"))
		case words[0] == "EXEC":
			inMulti = false
			res[i] = r.exec(queued)
		case inMulti:
			queued = append(queued, words)
			res[i] = mock.Result(mock.RedisString("QUEUED"))
		default:
			res[i] = r.answer(words)
		}
	}
	return res
}

func (r *replay) exec(queued [][]string) rueidis.RedisResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aborts > 0 {
		r.aborts--
		return mock.Result(mock.RedisNil())
	}
	if r.lost > 0 {
		r.lost--
		return mock.ErrorResult(io.ErrUnexpectedEOF)
	}
	lines := make([]string, len(queued))
	for i, words := range queued {
		lines[i] = strings.Join(words, " ")
	}
	r.commits = append(r.commits, lines)
	r.applied = append(r.applied, queued...)
	oks := make([]rueidis.RedisMessage, len(queued))
	for i := range oks {
		oks[i] = mock.RedisString("OK")
	}
	return mock.Result(mock.RedisArray(oks...))
}

// committed returns the commands of every applied MULTI, in order.
func (r *replay) committed() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.commits...)
}

// lastCommit is the latest applied MULTI's commands; nil: none.
func (r *replay) lastCommit() []string {
	c := r.committed()
	if len(c) == 0 {
		return nil
	}
	return c[len(c)-1]
}

// hashWritten is what the applied HSETs wrote to key, field by field.
func (r *replay) hashWritten(key string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for _, words := range r.applied {
		if words[0] == "HSET" && words[1] == key {
			for i := 2; i+1 < len(words); i += 2 {
				out[words[i]] = words[i+1]
			}
		}
	}
	return out
}

// sentLines returns every command sent so far.
func (r *replay) sentLines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sent...)
}

func (r *replay) B() rueidis.Builder { return r.b }

func (r *replay) Do(_ context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return r.do([]rueidis.Completed{cmd})[0]
}

func (r *replay) DoMulti(_ context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	return r.do(cmds)
}

func (r *replay) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return fn(replayConn{r: r})
}

func (r *replay) Dedicate() (rueidis.DedicatedClient, func()) { return replayConn{r: r}, func() {} }

func (r *replay) Nodes() map[string]rueidis.Client { return map[string]rueidis.Client{"replay": r} }

func (r *replay) Mode() rueidis.ClientMode { return rueidis.ClientModeStandalone }

func (r *replay) Close() {}

// replayConn is a dedicated connection of a replay.
type replayConn struct {
	rueidis.DedicatedClient // unused methods: calling one panics
	r                       *replay
}

func (c replayConn) B() rueidis.Builder { return c.r.b }

func (c replayConn) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return c.r.Do(ctx, cmd)
}

func (c replayConn) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	return c.r.DoMulti(ctx, cmds...)
}

func (c replayConn) Close() {}
