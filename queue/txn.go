package queue

import (
	"strings"

	"github.com/hopper-queue/hopper/queue/internal/engine"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// The optimistic runner is package txn's, run by the engine (WATCH,
// attempt, commit, backoff, lost-reply resolution: docs/design.md#watch).
// These are the names of it the transitions use.

// tx is one attempt of a commit: its token, the server's time its reads
// saw (Now), and its worker guard records.
type tx = engine.Txn

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

// isNoSuchKey tells the error of a command on a key that does not exist.
func isNoSuchKey(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.Contains(re.Error(), "no such key")
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
