package queue

import (
	"context"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/redis/rueidis"
)

// A commit's token: what one attempt of a transaction writes to its
// worker's guard, which every watcher of the guard sees and a lost
// commit's resolution looks for (see lookForToken).

// appendTokenRecord appends to cmds the writes of t's token to a worker's
// guard, the set of its recent commits: the write every watcher of the
// guard sees, and what a lost commit's resolution looks for. The guard's
// TTL and its bound are kept up when due (see machinery.GuardMemo).
func (e *engine) appendTokenRecord(cmds rueidis.Commands, c rueidis.DedicatedClient, t *tx, workerGuard string) rueidis.Commands {
	r := e.workerGuards.Plan(workerGuard, t.Sent)
	t.Records = append(t.Records, r)
	return e.workerGuards.AppendWrites(cmds, c.B(), r, t.Token, t.Now)
}

// The reads and writes of a lost reply's resolution on the worker's guard
// (see resolveOnce in txn.go, the runner's resolve in queue/internal/txn,
// and docs/design.md#lost-replies).

// lookForToken WATCHes a worker's guard and tells whether it holds token,
// with the server's time, for a resolution (see resolveOnce). The WATCH is
// left armed.
func (e *engine) lookForToken(ctx context.Context, c rueidis.DedicatedClient, workerGuard, token string) (found bool, now int64, err error) {
	res := c.DoMulti(ctx,
		c.B().Watch().Key(workerGuard).Build(),
		c.B().Zscore().Key(workerGuard).Member(token).Build(),
		c.B().Time().Build())
	if err := res[0].Error(); err != nil {
		return false, 0, err
	}
	if err := res[1].Error(); err == nil {
		return true, 0, nil
	} else if !rueidis.IsRedisNil(err) {
		return false, 0, err
	}
	now, err = machinery.ParseTime(res[2])
	return false, now, err
}

// fullTokenRecord adds token to a worker's guard, trims it and gives it its
// TTL, whatever the Build remembers of it: the write of a resolution, rare
// and left out of the memory (see appendTokenRecord for the commits').
func (e *engine) fullTokenRecord(c rueidis.DedicatedClient, workerGuard, token string, now int64) rueidis.Commands {
	return e.workerGuards.AppendWrites(nil, c.B(), machinery.GuardRecord{Key: workerGuard, Renew: true, Trim: true}, token, now)
}
