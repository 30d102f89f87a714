package queue

import (
	"github.com/redis/rueidis"
)

// A commit's token: what one attempt of a transaction writes to its
// worker's guard, which every watcher of the guard sees and a lost
// commit's resolution looks for (see resolution.go).

// appendTokenRecord appends to cmds the writes of t's token to a worker's
// guard, the set of its recent commits: the write every watcher of the
// guard sees, and what a lost commit's resolution looks for. The guard's
// TTL and its bound are kept up when due (see engine.GuardMemo).
func (b *Build) appendTokenRecord(cmds rueidis.Commands, c rueidis.DedicatedClient, t *tx, workerGuard string) rueidis.Commands {
	r := b.workerGuards.Plan(workerGuard, t.Sent)
	t.Records = append(t.Records, r)
	return b.workerGuards.AppendWrites(cmds, c.B(), r, t.Token, t.Now)
}
