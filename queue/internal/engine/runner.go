package engine

import (
	"context"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// The optimistic runner is package txn's (WATCH, attempt, commit, backoff,
// lost-reply resolution); this is what it needs of an engine.

// link ties a commit to what runs before and after it on one connection
// (see chain.go and kept_reads.go).
type link = txn.Link[Conn]

// Commit runs try until it commits or decides there is nothing to commit
// (see txn.Runner.Commit). workerGuard is the guard key of the acting
// worker: every committed transition writes its token there, which is how
// a commit whose reply was lost is resolved.
func (e *Engine[S, T]) Commit(ctx context.Context, mode, workerGuard string, try Attempt) error {
	return e.commitLinked(ctx, mode, workerGuard, link{}, try)
}

// commitLinked is Commit, linked to what runs before and after it on its
// connections.
func (e *Engine[S, T]) commitLinked(ctx context.Context, mode, workerGuard string, l link, try Attempt) error {
	return e.runner.Commit(ctx, mode, workerGuard, l, try)
}

// env is the engine as its runner sees it.
type env[S, T any] struct{ e *Engine[S, T] }

func (v env[S, T]) Dedicate(addr string) (Conn, func()) {
	if addr != "" {
		if node, ok := v.e.client.Nodes()[addr]; ok {
			return node.Dedicate()
		}
	}
	return v.e.client.Dedicate()
}

func (v env[S, T]) Record(cmds rueidis.Commands, c Conn, t *Txn, guard string) rueidis.Commands {
	return v.e.RecordToken(cmds, c, t, guard)
}

func (v env[S, T]) Applied(t *Txn) { v.e.workerGuards.Applied(t.Records, t.Sent) }

func (v env[S, T]) ResolveOnce(ctx context.Context, guard, token string) (applied, done bool, err error) {
	return v.e.resolveOnce(ctx, guard, token)
}

func (v env[S, T]) WatchDropped(ctx context.Context, err error) error {
	if v.e.watchDropped == nil {
		return err
	}
	return v.e.watchDropped(ctx, err)
}

func (v env[S, T]) Retried(ctx context.Context, mode string) {
	if v.e.meter != nil {
		v.e.meter.Retry(ctx, mode)
	}
}

func (v env[S, T]) Aborted(ctx context.Context, mode string) {
	if v.e.meter != nil {
		v.e.meter.Abort(ctx, mode)
	}
}

// resolveOnce looks once for token in workerGuard, after a lost reply:
// found, the commit applied; not found, it writes the guard in a
// transaction of its own, so that the lost commit, which watched it, can
// never apply later. done: the answer is final; not done, that write
// aborted (the guard moved, perhaps the lost commit landing) or failed:
// look again.
func (e *Engine[S, T]) resolveOnce(ctx context.Context, workerGuard, token string) (applied, done bool, err error) {
	err = e.client.Dedicated(func(c Conn) error {
		found, now, err := lookForToken(ctx, c, workerGuard, token)
		if err != nil || found {
			txn.Unwatch(c)
			applied, done = found, found
			return err
		}
		cmds := rueidis.Commands{c.B().Multi().Build()}
		cmds = e.workerGuards.AppendWrites(cmds, c.B(), machinery.GuardRecord{Key: workerGuard, Renew: true, Trim: true}, txn.NewToken(), now)
		res := c.DoMulti(ctx, append(cmds, c.B().Exec().Build())...)
		exec := res[len(res)-1]
		if err := exec.Error(); err != nil {
			if rueidis.IsRedisNil(err) {
				return nil // the guard moved (perhaps our commit landing): look again
			}
			return err
		}
		done = true
		return nil
	})
	return applied, done, err
}

// lookForToken WATCHes a worker's guard and tells whether it holds token,
// with the server's time, for a resolution (see resolveOnce). The WATCH is
// left armed.
func lookForToken(ctx context.Context, c Conn, workerGuard, token string) (found bool, now int64, err error) {
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

// RecordToken appends to cmds the writes of t's token to a worker's guard,
// the set of its recent commits: the write every watcher of the guard
// sees, and what a lost commit's resolution looks for. The guard's TTL and
// its bound are kept up when due (see machinery.GuardMemo). The runner
// records the acting worker's; a Domain records every other worker whose
// record its commit changes.
func (e *Engine[S, T]) RecordToken(cmds rueidis.Commands, c Conn, t *Txn, workerGuard string) rueidis.Commands {
	r := e.workerGuards.Plan(workerGuard, t.Sent)
	t.Records = append(t.Records, r)
	return e.workerGuards.AppendWrites(cmds, c.B(), r, t.Token, t.Now)
}
