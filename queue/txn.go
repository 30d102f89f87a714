package queue

import (
	"context"
	"strings"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// The optimistic runner is package txn's (WATCH, attempt, commit, backoff,
// lost-reply resolution: docs/design.md#watch); this is what it needs of a
// Build.

// runner commits a Build's transitions on its dedicated connections.
type runner = txn.Runner[rueidis.DedicatedClient, machinery.GuardRecord]

// tx is one attempt of a commit: its token, the server's time its reads
// saw (Now), and its worker guard records (see machinery.GuardMemo).
type tx = txn.Txn[machinery.GuardRecord]

// attempt is one optimistic try of a transition: on c it WATCHes its
// guards, reads, decides, and returns the writes to commit (nil: nothing to
// commit, the decision is final), with t.Now set. Writes that set a guard
// key store t.Token, and the worker guards other than the runner's are
// written through appendTokenRecord. The runner adds MULTI, EXEC and its
// worker guard write.
type attempt = txn.Attempt[rueidis.DedicatedClient, machinery.GuardRecord]

// link ties a commit to what runs before and after it on one connection
// (see chain.go and kept_reads.go).
type link = txn.Link[rueidis.DedicatedClient]

var (
	// errAborted marks an EXEC that another transaction's write aborted.
	errAborted = txn.ErrAborted
	// errRetry marks an attempt that found the world moved under it
	// before it committed anything, and should simply start over.
	errRetry = txn.ErrRetry
)

// errUnwatched wraps a final decision taken before anything was WATCHed, so
// that the runner need not spend a round trip on UNWATCH.
type errUnwatched = txn.Unwatched

func newRunner(e *engine) runner {
	o := &e.opts
	return runner{Env: buildEnv{e}, Policy: txn.Policy{MaxAttempts: o.MaxAttempts, BackoffFloor: o.BackoffFloor,
		BackoffCeil: o.BackoffCeil, ClusterWait: o.ClusterWait, ResolveWait: o.ResolveWait}}
}

// commit runs try until it commits or decides there is nothing to commit
// (see txn.Runner.Commit). workerGuard is the guard key of the acting
// worker: every committed transition writes its token there, which is how
// a commit whose reply was lost is resolved.
func (e *engine) commit(ctx context.Context, mode, workerGuard string, try attempt) error {
	return e.commitLinked(ctx, mode, workerGuard, link{}, try)
}

// commitLinked is commit, linked to what runs before and after it on its
// connections (see chain.go and kept_reads.go).
func (e *engine) commitLinked(ctx context.Context, mode, workerGuard string, l link, try attempt) error {
	return refusedCommand(e.runner.Commit(ctx, mode, workerGuard, l, try))
}

// buildEnv is the Build as its runner sees it.
type buildEnv struct{ e *engine }

func (e buildEnv) Dedicate(addr string) (rueidis.DedicatedClient, func()) {
	if addr != "" {
		if node, ok := e.e.client.Nodes()[addr]; ok {
			return node.Dedicate()
		}
	}
	return e.e.client.Dedicate()
}

func (e buildEnv) Record(cmds rueidis.Commands, c rueidis.DedicatedClient, t *tx, guard string) rueidis.Commands {
	return e.e.appendTokenRecord(cmds, c, t, guard)
}

func (e buildEnv) Applied(t *tx) { e.e.workerGuards.Applied(t.Records, t.Sent) }

func (e buildEnv) ResolveOnce(ctx context.Context, guard, token string) (applied, done bool, err error) {
	return e.e.resolveOnce(ctx, guard, token)
}

func (e buildEnv) WatchDropped(ctx context.Context, err error) error {
	return e.e.watchDropped(ctx, err)
}

func (e buildEnv) Retried(ctx context.Context, mode string) { e.e.meter.retry(ctx, mode) }
func (e buildEnv) Aborted(ctx context.Context, mode string) { e.e.meter.abort(ctx, mode) }

// isNoSuchKey tells the error of a command on a key that does not exist.
func isNoSuchKey(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.Contains(re.Error(), "no such key")
}

// resolveOnce looks once for token in workerGuard, after a lost reply:
// found, the commit applied; not found, it writes the guard in a
// transaction of its own, so that the lost commit, which watched it, can
// never apply later (docs/design.md#lost-replies). done: the answer is
// final; not done, that write aborted (the guard moved, perhaps the lost
// commit landing) or failed: look again.
func (e *engine) resolveOnce(ctx context.Context, workerGuard, token string) (applied, done bool, err error) {
	err = e.client.Dedicated(func(c rueidis.DedicatedClient) error {
		found, now, err := e.lookForToken(ctx, c, workerGuard, token)
		if err != nil || found {
			unwatch(c)
			applied, done = found, found
			return err
		}
		cmds := rueidis.Commands{c.B().Multi().Build()}
		cmds = append(cmds, e.fullTokenRecord(c, workerGuard, txn.NewToken(), now)...)
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

// unwatch disarms any WATCH on a connection going back to the pool (see
// txn.Unwatch).
func unwatch(c rueidis.DedicatedClient) { txn.Unwatch(c) }

var (
	jitter           = txn.Jitter
	sleep            = txn.Sleep
	execOutcome      = txn.ExecOutcome
	isRedirect       = txn.IsRedirect
	isConnErr        = txn.IsConnErr
	dedicatedContext = txn.DedicatedContext
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
