package queue

import (
	"time"

	"github.com/redis/rueidis"
)

// txn is one attempt of a commit: its token, and what it writes to worker
// guards, for the Build's memory once the commit is known applied.
type txn struct {
	token   string
	first   []rueidis.RedisResult // the first round trip's replies, made behind another commit (see chain.go); nil: to make
	sent    time.Time
	records []guardRecord
	// Room for a lone transition's records.
	firstRecord [1]guardRecord
}

func newTxn() *txn {
	t := &txn{token: newToken(), sent: time.Now()}
	t.records = t.firstRecord[:0]
	return t
}

// appendTokenRecord appends to cmds the writes of t's token at the head of
// a worker's guard, a list of its last commits: the write every watcher of
// the guard sees, and what a lost commit's resolution looks for. The
// guard's TTL and its bound are kept up when due (see workerGuards).
func (b *Build) appendTokenRecord(cmds rueidis.Commands, c rueidis.DedicatedClient, t *txn, workerGuard string) rueidis.Commands {
	r := b.workerGuards.plan(workerGuard, t.sent)
	t.records = append(t.records, r)
	return appendTokenWrites(cmds, c, r, t.token, b.ttlMS)
}

// appendTokenWrites appends to cmds the LPUSH of token onto r's guard, the
// LTRIM that r calls for, and its PEXPIRE: unconditional when r renews,
// NX (only a guard without a TTL, which the LPUSH just created) when not.
func appendTokenWrites(cmds rueidis.Commands, c rueidis.DedicatedClient, r guardRecord, token string, ttlMS int64) rueidis.Commands {
	cmds = append(cmds, c.B().Lpush().Key(r.key).Element(token).Build())
	if r.trim {
		cmds = append(cmds, c.B().Ltrim().Key(r.key).Start(0).Stop(recentTokens-1).Build())
	}
	if r.renew {
		cmds = append(cmds, c.B().Pexpire().Key(r.key).Milliseconds(ttlMS).Build())
	} else {
		cmds = append(cmds, c.B().Pexpire().Key(r.key).Milliseconds(ttlMS).Nx().Build())
	}
	return cmds
}
