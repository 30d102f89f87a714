package txn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/redis/rueidis"
)

var (
	// ErrContention: a transaction lost to concurrent writes MaxAttempts
	// times (package queue exports it).
	ErrContention = errors.New("queue: too much contention, transaction not committed")
	// ErrOutcomeUnknown: the connection broke after the commit was sent, and
	// Redis could not be reached to find out whether it was applied
	// (package queue exports it).
	ErrOutcomeUnknown = errors.New("queue: transaction outcome unknown")
	// ErrAborted marks an EXEC that another transaction's write aborted.
	ErrAborted = errors.New("queue: transaction aborted by a concurrent write")
	// ErrRetry marks an attempt that found the world moved under it before
	// it committed anything (for example a reclaim candidate that changed
	// owner) and should simply start over.
	ErrRetry = errors.New("queue: retry")
)

// Unwatched wraps a final decision taken before anything was WATCHed, so
// that the runner need not spend a round trip on UNWATCH.
type Unwatched struct{ Err error }

func (e Unwatched) Error() string { return "unwatched" }

// ExecOutcome reads the replies of a MULTI ... EXEC batch. ambiguous is true
// when the connection failed on the way: the commit may or may not have been
// applied. ErrAborted is a watched key's change; a redirect while queueing
// aborted the batch; a failed command inside EXEC is reported as such, since
// Redis applies the rest regardless.
func ExecOutcome(res []rueidis.RedisResult, what string) (ambiguous bool, err error) {
	for _, r := range res {
		if e := r.NonRedisError(); e != nil {
			return true, e
		}
	}
	for _, r := range res[:len(res)-1] {
		if err := r.Error(); IsRedirect(err) {
			return false, err // refused while queueing: EXECABORT, nothing applied
		}
	}
	exec := res[len(res)-1]
	if err := exec.Error(); err != nil {
		if rueidis.IsRedisNil(err) {
			return false, ErrAborted
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

// IsRedirect tells the errors after which a transaction starts over on the
// node that now serves the build's slot: MOVED, ASK, TRYAGAIN, CLUSTERDOWN.
func IsRedirect(err error) bool {
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

// MovedTo returns the address a MOVED error names.
func MovedTo(err error) (string, bool) {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return "", false
	}
	return re.IsMoved()
}

// IsConnErr tells an error of the connection itself (refused, reset,
// closed, timed out, or no node serving the slot during a failover), as
// opposed to a reply of Redis or a decision of ours: a read phase that
// failed this way sent nothing to commit, and may simply run again once
// the server is back.
func IsConnErr(ctx context.Context, err error) bool {
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
