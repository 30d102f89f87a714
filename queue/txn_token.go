package queue

import (
	"strconv"

	"github.com/redis/rueidis"
)

// A commit's token: what one attempt of a transaction writes to its
// worker's guard, which every watcher of the guard sees and a lost
// commit's resolution looks for (see resolution.go).

// appendTokenRecord appends to cmds the writes of t's token to a worker's
// guard, the set of its recent commits: the write every watcher of the
// guard sees, and what a lost commit's resolution looks for. The guard's
// TTL and its bound are kept up when due (see workerGuards).
func (b *Build) appendTokenRecord(cmds rueidis.Commands, c rueidis.DedicatedClient, t *tx, workerGuard string) rueidis.Commands {
	r := b.workerGuards.plan(workerGuard, t.Sent)
	t.Records = append(t.Records, r)
	return b.workerGuards.appendWrites(cmds, c, r, t.Token, t.Now)
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
