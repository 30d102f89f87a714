// Package txn runs hopper's optimistic transactions (docs/design.md#watch):
// WATCH the guards and read, decide, then MULTI, the writes, the token of
// the commit on the acting worker's guard, EXEC; start over with backoff
// when a watched guard changed; resolve a commit whose reply was lost
// (docs/design.md#lost-replies). It also carries, behind a commit's EXEC in
// the same write, the commands of whoever rides along (chaining and kept
// reads, docs/design.md#chaining), and merges a batch's writes.
//
// It knows nothing of keys, guards or transitions: what it needs of a
// build comes through Env, and the connection through Conn, narrow enough
// for a fake in unit tests.
package txn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// Conn is the dedicated connection a transaction runs on;
// rueidis.DedicatedClient is one.
type Conn interface {
	Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult
	DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult
	B() rueidis.Builder
}

// Env is what the runner needs from the build it commits for. R is the
// build's record of one token write to a worker's guard.
type Env[C Conn, R any] interface {
	// Dedicate takes a connection from the pool, and release gives it
	// back: of the node at addr when addr is not "" and the client knows
	// it (the node a MOVED named), else of the build's client.
	Dedicate(addr string) (c C, release func())
	// Record appends the writes of t's token to guard, adding their
	// record to t.Records.
	Record(cmds rueidis.Commands, c C, t *Txn[R], guard string) rueidis.Commands
	// Applied tells that t's commit applied: its records hold.
	Applied(t *Txn[R])
	// ResolveOnce looks once for token in guard, after a lost reply (see
	// Runner.resolve). done: the answer is final; applied: the commit was.
	ResolveOnce(ctx context.Context, guard, token string) (applied, done bool, err error)
	// WatchDropped tells, after err, a connection lost before anything
	// was sent to commit, whether the server hangs up on WATCH: its
	// error then, else err itself.
	WatchDropped(ctx context.Context, err error) error
	// Retried and Aborted count, by mode, the attempts that start over,
	// and those of them that wait first.
	Retried(ctx context.Context, mode string)
	Aborted(ctx context.Context, mode string)
}

// Txn is one attempt of a commit: its token, the server's time its reads
// saw, and its records of token writes, kept once the commit is applied.
type Txn[R any] struct {
	Token   string
	First   []rueidis.RedisResult // the first round trip's replies, made behind another commit (Link.From); nil: to make
	Now     int64                 // the server's time the attempt read, epoch ms: its tokens' score; 0: not read
	Sent    time.Time
	Records []R
	room    [1]R // a lone transition's record, without allocating
	begun   bool // the attempt's writes start with MULTI (see Writes)
}

// Writes starts the commands of t's commit: MULTI alone, with room for n
// writes after it. An attempt that appends its writes to it and returns the
// whole spares the runner a copy of them; nothing to commit is still nil.
func (t *Txn[R]) Writes(b rueidis.Builder, n int) rueidis.Commands {
	t.begun = true
	cmds := make(rueidis.Commands, 1, n+recordRoom)
	cmds[0] = b.Multi().Build()
	return cmds
}

// recordRoom is room for what the runner appends to an attempt's writes:
// the token's record and EXEC.
const recordRoom = 6

func newTxn[R any]() *Txn[R] {
	t := &Txn[R]{Token: NewToken(), Sent: time.Now()}
	t.Records = t.room[:0]
	return t
}

// Attempt is one optimistic try of a transition. On the dedicated
// connection c it WATCHes its guards, reads, decides, and returns the
// writes to commit (nil: nothing to commit, the decision is final). It sets
// t.Now to the server's time it read; t.Token identifies this try. The
// runner adds MULTI, EXEC and the token record on the acting worker's guard.
type Attempt[C Conn, R any] func(ctx context.Context, c C, t *Txn[R]) (writes rueidis.Commands, err error)

// Runner commits the attempts of one build.
type Runner[C Conn, R any] struct {
	Policy Policy
	Env    Env[C, R]
}

// Commit runs try until it commits or decides there is nothing to commit,
// retrying with jittered exponential backoff when a watched guard changed.
// guard is the guard key of the acting worker: every commit writes its
// token there, which is how a commit whose reply was lost is resolved.
//
// On return, either the transition's writes were applied exactly once
// (nil error), or none were (any other error but ErrOutcomeUnknown). The
// caller's cancellation takes effect between attempts, or between an
// attempt's reads and its commit, when nothing was sent to commit: a commit
// in flight runs to its end (bounded by the client's connection timeouts),
// so that a cancelled caller is never left not knowing what it committed.
//
// The first attempt runs on l.From when it holds a first round trip; each
// commit sent carries l.Behind (see Link).
func (r *Runner[C, R]) Commit(ctx context.Context, mode, guard string, l Link[C], try Attempt[C, R]) error {
	retry := newRetrier(r.Policy)
	dctx := DedicatedContext(ctx)
	node := "" // after MOVED, the node it names
	from := l.From
	defer func() { from.Drop() }() // not run: gave up before the first attempt
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := newTxn[R]()
		var c C
		var release func()
		if from != nil && from.Replies != nil {
			t.First, c, release = from.Replies, from.Conn, from.Release
		} else {
			c, release = r.Env.Dedicate(node)
		}
		from = nil // used, or its replies were lost: nothing to give back
		handed, ambiguous, err := r.once(dctx, guard, l, try, t, c, release)
		if !handed {
			release()
		}
		if ambiguous {
			if done, err := r.settle(ctx, guard, t.Token, err); done {
				return err
			}
			err = ErrAborted // not applied, and now it never will be: try again
		}
		kind := classify(ctx, err)
		if kind == retryNone {
			return err // nil too: committed, or nothing to commit
		}
		if kind == retryConn {
			if werr := r.Env.WatchDropped(ctx, err); werr != err {
				return werr // a proxy that hangs up on WATCH
			}
		}
		wait, stop := retry.next(kind, err, time.Now())
		if stop != nil {
			return stop
		}
		r.Env.Retried(ctx, mode)
		if kind == retryReread {
			continue
		}
		if kind == retryCluster || kind == retryConn {
			// The build's slot moved (cluster resharding or failover). A
			// dedicated connection does not follow redirects, and rueidis
			// refreshes its slot map in the background, up to a second
			// later: go straight to the node MOVED names.
			node, _ = MovedTo(err)
		}
		r.Env.Aborted(ctx, mode)
		if err := Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// once runs one attempt on c and, when it has something to commit, sends
// the commit with l.Behind's commands after the EXEC. handed: one of
// l.Behind, or l.Final, now holds c. ambiguous: the connection failed
// after the commit was sent.
//
// A deadline-free ctx is never passed here (see DedicatedContext).
func (r *Runner[C, R]) once(ctx context.Context, guard string, l Link[C], try Attempt[C, R], t *Txn[R], c C, release func()) (handed, ambiguous bool, err error) {
	writes, err := try(ctx, c, t)
	if u, ok := err.(Unwatched); ok {
		return false, false, u.Err
	}
	if err == nil && writes == nil && l.Final != nil && l.Final(c, release) {
		return true, false, nil
	}
	if err != nil || writes == nil {
		Unwatch(c)
		return false, false, err
	}
	if t.Now == 0 {
		Unwatch(c)
		return false, false, ErrNoServerTime
	}
	if err := ctx.Err(); err != nil {
		// The caller gave up (a deadline, or a cancellation the reads did
		// not see) between the reads and the commit. Nothing is sent: no
		// lost reply to resolve, and the connection goes back to the pool
		// disarmed.
		Unwatch(c)
		return false, false, err
	}
	cmds := writes
	if !t.begun {
		cmds = make(rueidis.Commands, 0, len(writes)+recordRoom)
		cmds = append(cmds, c.B().Multi().Build())
		cmds = append(cmds, writes...)
	}
	cmds = r.Env.Record(cmds, c, t, guard)
	cmds = append(cmds, c.B().Exec().Build())
	own := len(cmds)
	var room [4]carried[C]
	cmds, carried := carry(c, l.Behind, cmds, room[:0])
	res := c.DoMulti(ctx, cmds...)
	ambiguous, err = ExecOutcome(res[:own], "commit")
	if err == nil {
		r.Env.Applied(t)
	}
	return handOver(c, release, carried, res[own:], err), ambiguous, err
}

// settle resolves a commit whose reply was lost: done, the commit's outcome
// (nil: applied); not done, it was not applied and never will be.
func (r *Runner[C, R]) settle(ctx context.Context, guard, token string, lost error) (done bool, err error) {
	applied, rerr := r.resolve(ctx, guard, token)
	switch {
	case rerr != nil:
		return true, fmt.Errorf("%w: %v (then %v)", ErrOutcomeUnknown, lost, rerr)
	case applied:
		return true, nil
	case ctx.Err() != nil:
		return true, ctx.Err()
	}
	return false, nil
}

// ErrNoServerTime is a commit whose attempt did not read the server's time,
// which scores its token: a bug, refused before anything is sent.
var ErrNoServerTime = errors.New("queue: internal error: a commit without the server's time")
