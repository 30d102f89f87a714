package queue

import (
	"context"
	"time"
)

// tailTurn makes the requeues of one Build take turns before they reach
// Redis. Every requeue WATCHes the build's tail guard, and every requeue that
// puts its unit back writes it: two requeues in flight at once therefore
// abort one of them in Redis, which waits out a backoff and reads again.
// Queueing here instead turns that abort into a short wait behind the other
// requeue, which is what many workers of one process (one Build) would
// otherwise spend their retries on.
//
// The wait is bounded: when requeues arrive faster than one at a time can
// commit, a queue would grow without end, so a requeue that has waited as
// long as the longest backoff goes ahead and races through the guard, as do
// the requeues of other processes. The guard alone keeps every requeue
// correct: the turn saves work, it orders nothing Redis relies on.
type tailTurn struct {
	ch   chan struct{}
	wait time.Duration
}

func newTailTurn(wait time.Duration) tailTurn {
	return tailTurn{ch: make(chan struct{}, 1), wait: wait}
}

// take waits for the turn, for at most t.wait: held tells whether the caller
// holds it and must give it back. err is ctx's when ctx ended first.
func (t tailTurn) take(ctx context.Context) (held bool, err error) {
	select {
	case t.ch <- struct{}{}:
		return true, nil
	default:
	}
	timer := time.NewTimer(t.wait)
	defer timer.Stop()
	select {
	case t.ch <- struct{}{}:
		return true, nil
	case <-timer.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// give hands the turn on.
func (t tailTurn) give() { <-t.ch }
