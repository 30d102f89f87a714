package queue

import (
	"errors"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// A commit's token: what one attempt of a transaction writes to its
// worker's guard, which every watcher of the guard sees and a lost
// commit's resolution looks for (see resolution.go).

// txn is one attempt of a commit: its token, the server's time its reads
// saw, and what it writes to worker guards, for the Build's memory once
// the commit is known applied.
type txn struct {
	token   string
	first   []rueidis.RedisResult // the first round trip's replies, made behind another commit (see chain.go); nil: to make
	now     int64                 // the server's time the attempt read, epoch ms: its tokens' score; 0: not read
	sent    time.Time
	records []guardRecord
	// Room for a lone transition's records.
	firstRecord [1]guardRecord
}

// errNoServerTime is a commit whose attempt did not read the server's time,
// which scores its token: a bug, refused before anything is sent.
var errNoServerTime = errors.New("queue: internal error: a commit without the server's time")

func newTxn() *txn {
	t := &txn{token: newToken(), sent: time.Now()}
	t.records = t.firstRecord[:0]
	return t
}

// appendTokenRecord appends to cmds the writes of t's token to a worker's
// guard, the set of its recent commits: the write every watcher of the
// guard sees, and what a lost commit's resolution looks for. The guard's
// TTL and its bound are kept up when due (see workerGuards).
func (b *Build) appendTokenRecord(cmds rueidis.Commands, c rueidis.DedicatedClient, t *txn, workerGuard string) rueidis.Commands {
	r := b.workerGuards.plan(workerGuard, t.sent)
	t.records = append(t.records, r)
	return b.workerGuards.appendWrites(cmds, c, r, t.token, t.now)
}

// appendWrites appends to cmds the ZADD of token, scored now, to r's
// guard, the trim of the tokens older than the window that r calls for,
// and its PEXPIRE: unconditional when r renews, NX (only a guard without a
// TTL, which the ZADD just created) when not.
func (w *workerGuards) appendWrites(cmds rueidis.Commands, c rueidis.DedicatedClient, r guardRecord, token string, now int64) rueidis.Commands {
	cmds = append(cmds, c.B().Zadd().Key(r.key).ScoreMember().ScoreMember(float64(now), token).Build())
	if r.trim {
		cutoff := "(" + strconv.FormatInt(now-w.windowMS, 10)
		cmds = append(cmds, c.B().Zremrangebyscore().Key(r.key).Min("-inf").Max(cutoff).Build())
	}
	if r.renew {
		cmds = append(cmds, c.B().Pexpire().Key(r.key).Milliseconds(w.ttlMS).Build())
	} else {
		cmds = append(cmds, c.B().Pexpire().Key(r.key).Milliseconds(w.ttlMS).Nx().Build())
	}
	return cmds
}
