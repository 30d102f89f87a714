package queue

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// attempt is one optimistic try of a transition. On the dedicated connection
// c it WATCHes its guards, reads, decides, and returns the writes to commit
// (nil: nothing to commit, the decision is final). t.token identifies this
// try: writes that set a guard key store it, and the worker guards other
// than the runner's are written through appendTokenRecord. The runner adds MULTI,
// EXEC and its worker guard write.
type attempt func(ctx context.Context, c rueidis.DedicatedClient, t *txn) (writes rueidis.Commands, err error)

// errUnwatched wraps a final decision taken before anything was WATCHed, so
// that the runner need not spend a round trip on UNWATCH.
type errUnwatched struct{ err error }

func (e errUnwatched) Error() string { return "unwatched" }

// errAborted marks an EXEC that another transaction's write aborted.
var errAborted = errors.New("queue: transaction aborted by a concurrent write")

// retry marks an attempt that found the world moved under it before it
// committed anything (for example a reclaim candidate that changed owner)
// and should simply start over.
var errRetry = errors.New("queue: retry")

// commit runs try until it commits or decides there is nothing to commit,
// retrying with jittered exponential backoff when a watched guard changed.
// workerGuard is the guard key of the acting worker: every committed
// transition writes its token there, which is how a commit whose reply was
// lost is resolved (see resolve).
//
// On return, either the transition's writes were applied exactly once
// (nil error), or none were (any other error but ErrOutcomeUnknown). The
// caller's cancellation takes effect between attempts, or between an
// attempt's reads and its commit, when nothing was sent to commit: a commit
// in flight runs to its end (bounded by the client's connection timeouts),
// so that a cancelled caller is never left not knowing what it committed.
//
// Deadline-free contexts are not passed to the dedicated connection: rueidis
// would switch that pooled connection to its background pipeline for good,
// and every later return to the pool would cost one more round trip.
func (b *Build) commit(ctx context.Context, mode, workerGuard string, try attempt) error {
	return b.commitLinked(ctx, mode, workerGuard, link{}, try)
}

// commitLinked is commit, linked to the batches before and after it (see
// chain.go): its first attempt runs on the connection l.from holds, with
// t.first set to the replies of the first round trip already made there;
// and right before each commit it sends, it carries behind the EXEC the
// first round trip of the batch l.next gives, and then hands that batch
// its connection.
func (b *Build) commitLinked(ctx context.Context, mode, workerGuard string, l link, try attempt) error {
	retry := newRetrier(&b.opts) // see retry.go
	dctx := dedicatedContext(ctx)
	client := b.client // after MOVED, the node it names
	from := l.from
	defer func() { from.drop() }() // not run: gave up before the first attempt
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := newTxn()
		var ambiguous bool
		var err error
		body := func(c rueidis.DedicatedClient, release func()) (handed bool, err error) {
			writes, err := try(dctx, c, t)
			if u, ok := err.(errUnwatched); ok {
				return false, u.err
			}
			if err != nil || writes == nil {
				unwatch(c)
				return false, err
			}
			if t.now == 0 {
				unwatch(c)
				return false, errNoServerTime
			}
			if err := dctx.Err(); err != nil {
				// The caller gave up (a deadline, or a cancellation the
				// reads did not see) between the reads and the commit.
				// Nothing is sent: no lost reply to resolve, and the
				// connection goes back to the pool disarmed.
				unwatch(c)
				return false, err
			}
			cmds := make(rueidis.Commands, 0, len(writes)+5)
			cmds = append(cmds, c.B().Multi().Build())
			cmds = append(cmds, writes...)
			cmds = b.appendTokenRecord(cmds, c, t, workerGuard)
			cmds = append(cmds, c.B().Exec().Build())
			own := len(cmds)
			cmds = l.ahead.appendTo(cmds, c) // see read_ahead.go
			ahead := len(cmds) - own
			var next *prefetch
			if l.next != nil {
				if next = l.next(c); next != nil {
					cmds = append(cmds, next.cmds...)
					next.cmds = nil // recycled once sent
				}
			}
			res := c.DoMulti(dctx, cmds...)
			ambiguous, err = execOutcome(res[:own], "commit")
			if err == nil {
				b.workerGuards.applied(t.records, t.sent)
			}
			l.ahead.arrived(res[own : own+ahead])
			if next != nil {
				handed = next.arrived(c, release, res[own+ahead:])
				next.batch[0].wake <- wakeup{batch: next.batch, from: next}
			}
			return handed, err
		}
		var c rueidis.DedicatedClient
		var release func()
		if p := from; p != nil && p.replies != nil {
			t.first, c, release = p.replies, p.c, p.release
		} else {
			c, release = client.Dedicate()
		}
		from = nil // used, or its replies were lost: nothing to give back
		var handed bool
		if handed, err = body(c, release); !handed {
			release()
		}
		if ambiguous {
			applied, rerr := b.resolve(ctx, workerGuard, t.token)
			switch {
			case rerr != nil:
				return fmt.Errorf("%w: %v (then %v)", ErrOutcomeUnknown, err, rerr)
			case applied:
				return nil
			case ctx.Err() != nil:
				return ctx.Err()
			}
			err = errAborted // not applied, and now it never will be: try again
		}
		kind := classify(ctx, err)
		if kind == retryNone {
			return refusedCommand(err) // nil too: committed, or nothing to commit
		}
		if kind == retryConn {
			if werr := b.watchDropped(ctx, err); werr != err {
				return werr // a proxy that hangs up on WATCH
			}
		}
		wait, stop := retry.next(kind, err, time.Now())
		if stop != nil {
			return stop
		}
		b.meter.retry(ctx, mode)
		if kind == retryReread {
			continue
		}
		if kind == retryCluster || kind == retryConn {
			// The build's slot moved (cluster resharding or failover). A
			// dedicated connection does not follow redirects, and rueidis
			// refreshes its slot map in the background, up to a second
			// later: go straight to the node MOVED names.
			client = b.client
			if addr, ok := movedTo(err); ok {
				if node, ok := b.client.Nodes()[addr]; ok {
					client = node
				}
			}
		}
		b.meter.abort(ctx, mode)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// resolve finds out whether the commit that wrote token to workerGuard was
// applied, after its reply was lost. It also makes sure a commit still in
// flight can never apply later: when the token is not there it writes
// the guard in a transaction of its own, and a late EXEC of the lost commit,
// which watched that guard, then aborts. It keeps trying for ResolveWait,
// even after ctx ends, since the caller cannot act without the answer.
func (b *Build) resolve(ctx context.Context, workerGuard, token string) (applied bool, err error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.opts.ResolveWait)
	defer cancel()
	wait := 10 * time.Millisecond
	for {
		applied, done, err := b.resolveOnce(rctx, workerGuard, token)
		if done {
			return applied, nil
		}
		if serr := sleep(rctx, jitter(wait)); serr != nil {
			if err == nil {
				err = serr
			}
			return false, err
		}
		wait = min(wait*2, time.Second)
	}
}

// isNoSuchKey tells the error of a command on a key that does not exist.
func isNoSuchKey(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.Contains(re.Error(), "no such key")
}

func (b *Build) resolveOnce(ctx context.Context, workerGuard, token string) (applied, done bool, err error) {
	err = b.client.Dedicated(func(c rueidis.DedicatedClient) error {
		found, now, err := b.lookForToken(ctx, c, workerGuard, token)
		if err != nil || found {
			unwatch(c)
			applied, done = found, found
			return err
		}
		cmds := rueidis.Commands{c.B().Multi().Build()}
		cmds = append(cmds, b.fullTokenRecord(c, workerGuard, newToken(), now)...)
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

// unwatch disarms any WATCH on a connection going back to the pool, where a
// stale WATCH would abort some later, unrelated EXEC. A failure means the
// connection is broken, and the pool drops broken connections.
func unwatch(c rueidis.DedicatedClient) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Do(ctx, c.B().Unwatch().Build()).Error()
}

func newToken() string {
	var b [12]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// jitter returns a wait in [d/2, d): spread out, so that racing workers do
// not collide again in lockstep.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// nowMS reads the server's TIME reply as epoch milliseconds: workers on many
// machines must agree on time, so it never comes from the client's clock.
func nowMS(r rueidis.RedisResult) (int64, error) {
	parts, err := r.AsStrSlice()
	if err != nil || len(parts) != 2 {
		return 0, fmt.Errorf("queue: TIME reply %v: %w", parts, err)
	}
	sec, err1 := strconv.ParseInt(parts[0], 10, 64)
	usec, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("queue: TIME reply %v is not numeric", parts)
	}
	return sec*1000 + usec/1000, nil
}

// execOutcome reads the replies of a MULTI ... EXEC batch. ambiguous is true
// when the connection failed on the way: the commit may or may not have been
// applied. errAborted is a watched key's change; a redirect while queueing
// aborted the batch; a failed command inside EXEC is reported as such, since
// Redis applies the rest regardless.
func execOutcome(res []rueidis.RedisResult, what string) (ambiguous bool, err error) {
	for _, r := range res {
		if e := r.NonRedisError(); e != nil {
			return true, e
		}
	}
	for _, r := range res[:len(res)-1] {
		if err := r.Error(); isRedirect(err) {
			return false, err // refused while queueing: EXECABORT, nothing applied
		}
	}
	exec := res[len(res)-1]
	if err := exec.Error(); err != nil {
		if rueidis.IsRedisNil(err) {
			return false, errAborted
		}
		return false, fmt.Errorf("queue: %s refused: %w", what, err)
	}
	replies, err := exec.ToArray()
	if err != nil {
		return false, fmt.Errorf("queue: %s reply: %w", what, err)
	}
	for i, r := range replies {
		if err := r.Error(); err != nil {
			return false, fmt.Errorf("queue: command %d of the %s failed, the rest was applied: %w", i+1, what, err)
		}
	}
	return false, nil
}

// dedicatedContext is ctx when it has a deadline, else ctx without its
// cancellation (see commit).
func dedicatedContext(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); ok {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// isRedirect tells the errors after which a transaction starts over on the
// node that now serves the build's slot: MOVED, ASK, TRYAGAIN, CLUSTERDOWN.
func isRedirect(err error) bool {
	if err == nil {
		return false
	}
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return false
	}
	if _, ok := re.IsMoved(); ok {
		return true
	}
	if _, ok := re.IsAsk(); ok {
		return true
	}
	return re.IsTryAgain() || re.IsClusterDown()
}

// movedTo returns the address a MOVED error names.
func movedTo(err error) (string, bool) {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return "", false
	}
	return re.IsMoved()
}

// isConnErr tells an error of the connection itself (refused, reset, closed,
// timed out, or no node serving the slot during a failover), as opposed to a reply of Redis or a decision of ours: a read
// phase that failed this way sent nothing to commit, and may simply run
// again once the server is back.
func isConnErr(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var re *rueidis.RedisError
	if errors.As(err, &re) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, rueidis.ErrClosing) || errors.Is(err, rueidis.ErrNoSlot) || errors.Is(err, rueidis.ErrNoAddr)
}

// Transient reports whether err is one after which the same call may well
// succeed later without anyone fixing anything: the connection broke, was
// refused or timed out, or the server is loading or failing over
// (CLUSTERDOWN, TRYAGAIN, LOADING). Stale, corrupt, invalid and cancelled
// are never transient. Safe for concurrent use.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrStale) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrInvalidArgument) {
		return false
	}
	var re *rueidis.RedisError
	if errors.As(err, &re) {
		return re.IsClusterDown() || re.IsTryAgain() || re.IsLoading()
	}
	return isConnErr(context.Background(), err)
}

// readTimeout bounds one plain read (meta and the tombstone, progress, a new
// entry): rueidis retries a read-only command after a network error until
// its context ends, so a deadline-free caller would wait for as long as
// Redis stays away instead of learning that it is unreachable.
const readTimeout = 5 * time.Second

func boundedRead(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
