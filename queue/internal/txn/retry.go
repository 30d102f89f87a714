package txn

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Policy bounds a transition's tries (package queue's Options of the same
// names).
type Policy struct {
	MaxAttempts               int
	BackoffFloor, BackoffCeil time.Duration
	ClusterWait, ResolveWait  time.Duration
}

// A transition starts over for reasons of three kinds, and each has a bound
// of its own (see docs/design.md#cluster):
//
//   - contention: a watched guard changed (ErrAborted) or the reads found
//     the world moved under them (ErrRetry). Another worker got there
//     first, and trying again soon is right: MaxAttempts tries, with a
//     backoff between BackoffFloor and BackoffCeil.
//   - the cluster: the build's slot is on another node (MOVED), half moved
//     (ASK, TRYAGAIN) or not served (CLUSTERDOWN). Nobody else is to blame
//     and the tries themselves prove nothing: a slot migration or a
//     failover takes as long as it takes. So these are ridden out for
//     ClusterWait from the first of them, however many tries that makes,
//     with a slower backoff.
//   - the connection failed before anything was sent to commit: ridden out
//     for ResolveWait (a node down, a failover under way).
//
// Anything else ends the transition.

// retryKind is why an attempt failed, as far as starting over goes.
type retryKind int

const (
	retryNone      retryKind = iota // final: return the error
	retryContended                  // EXEC aborted by a watched guard's change
	retryReread                     // the reads found the world moved: read again at once
	retryCluster                    // MOVED, ASK, TRYAGAIN, CLUSTERDOWN
	retryConn                       // the connection failed before the commit was sent
)

// clusterBackoffCeil caps the wait between tries while the build's slot is
// moving or failing over. It is longer than the contention backoff's: a
// migration or an election lasts seconds, and up to ten tries a second
// learn its end soon enough without loading the nodes that serve it.
const clusterBackoffCeil = 100 * time.Millisecond

// classify tells why err, the outcome of one attempt, may be tried again.
func classify(ctx context.Context, err error) retryKind {
	switch {
	case errors.Is(err, ErrAborted):
		return retryContended
	case errors.Is(err, ErrRetry):
		return retryReread
	case IsRedirect(err):
		return retryCluster
	case IsConnErr(ctx, err):
		return retryConn
	}
	return retryNone
}

// retrier keeps one transition's account of its failed attempts: how many
// lost to contention, since when the cluster or the connection has been
// failing it, and the next waits.
type retrier struct {
	opts                 Policy
	contended            int           // attempts lost to contention
	wait, clusterWait    time.Duration // next backoffs, before jitter
	unserved, disconnect time.Time     // first cluster reply, first connection failure; zero: none yet
}

func newRetrier(opts Policy) *retrier {
	return &retrier{opts: opts, wait: opts.BackoffFloor, clusterWait: opts.BackoffFloor}
}

// next decides, at now, what follows an attempt that failed with err of
// kind: the wait before the next attempt, or the error to return.
func (r *retrier) next(kind retryKind, err error, now time.Time) (time.Duration, error) {
	switch kind {
	case retryContended, retryReread:
		r.contended++
		if r.contended >= r.opts.MaxAttempts {
			return 0, fmt.Errorf("%w after %d attempts", ErrContention, r.contended)
		}
		if kind == retryReread {
			return 0, nil
		}
		return r.backoff(&r.wait, r.opts.BackoffCeil), nil
	case retryCluster:
		if r.unserved.IsZero() {
			r.unserved = now
		}
		if waited := now.Sub(r.unserved); waited >= r.opts.ClusterWait {
			return 0, fmt.Errorf("queue: the build's slot was still moving or not served after %v (ClusterWait %v): %w",
				waited.Round(time.Millisecond), r.opts.ClusterWait, err)
		}
		return r.backoff(&r.clusterWait, max(clusterBackoffCeil, r.opts.BackoffCeil)), nil
	case retryConn:
		if r.disconnect.IsZero() {
			r.disconnect = now
		}
		if now.Sub(r.disconnect) >= r.opts.ResolveWait {
			return 0, err
		}
		return r.backoff(&r.wait, r.opts.BackoffCeil), nil
	}
	return 0, err
}

// backoff returns the jittered wait *d, and doubles *d up to ceil.
func (r *retrier) backoff(d *time.Duration, ceil time.Duration) time.Duration {
	w := Jitter(*d)
	*d = min(*d*2, ceil)
	return w
}
