package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// Sentinel errors of the transitions. They are wrapped with the detail that
// helps (build key, unit, entry); check them with errors.Is.
var (
	// ErrStale: the worker no longer owns the entry (it was reclaimed,
	// settled or deleted, or its delivery count moved on). Nothing was
	// written.
	ErrStale = errors.New("queue: reservation is stale")

	// ErrCorrupt: the build's meta or the unit's unit_state is missing after
	// the build was ready. State is never re-created; nothing was written
	// (but see Reclaim).
	ErrCorrupt = errors.New("queue: build state is missing or corrupt")

	// ErrContention: the transition kept losing its optimistic race and gave
	// up after the configured number of attempts. Nothing was written.
	ErrContention = txn.ErrContention

	// ErrInvalidArgument: a caller's value was refused before anything was
	// written; before anything was sent to Redis, but for what only the
	// build can tell: a fenced transition naming another unit than the one
	// its entry carries (see entryUnitCheck in reservation.go).
	ErrInvalidArgument = errors.New("queue: invalid argument")

	// ErrOutcomeUnknown: the connection broke after the commit was sent, and
	// Redis could not be reached to find out whether it was applied. Reading
	// the build state later tells; the transition must not be repeated blindly.
	ErrOutcomeUnknown = txn.ErrOutcomeUnknown
)

func isStale(err error) bool   { return errors.Is(err, ErrStale) }
func isCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }

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

// Sentinel errors of a build's lifecycle: publishing, joining, completion.
// Like the transitions' errors they are wrapped with the detail that helps;
// check them with errors.Is.
var (
	// ErrLeaseLost: Publish was called with a lease that is not (or no
	// longer) the build's leader. Nothing was written.
	ErrLeaseLost = errors.New("queue: publisher lease lost")

	// ErrBuildBurnt: the build id was published before (its tombstone
	// lives), and its state is gone or is being looked at by someone else.
	// A build id is never reused while its tombstone lives: choose a new
	// one. Nothing was written.
	ErrBuildBurnt = errors.New("queue: build id already used")

	// ErrAlreadyPublished: the build's meta exists; someone published it
	// first. Nothing was written.
	ErrAlreadyPublished = errors.New("queue: build already published")

	// ErrInitFailed: the build was published in failure mode, its manifest
	// having load errors (see InitFailedError).
	ErrInitFailed = errors.New("queue: build failed to initialize")

	// ErrNeverInitialized: no worker published the build before the init
	// timeout passed.
	ErrNeverInitialized = errors.New("queue: build never initialized")

	// ErrFingerprintMismatch: the published build is another suite than the
	// joiner's (see FingerprintMismatchError).
	ErrFingerprintMismatch = errors.New("queue: fingerprint mismatch")
)

// InitFailedError is Join's error for a build published with load errors.
// errors.Is(err, ErrInitFailed) holds.
type InitFailedError struct {
	BuildID    string
	LoadErrors []string
}

func (e *InitFailedError) Error() string {
	return fmt.Sprintf("queue: build %s failed to initialize: %d load error(s): %s",
		e.BuildID, len(e.LoadErrors), strings.Join(e.LoadErrors, "; "))
}

// Unwrap makes errors.Is(err, ErrInitFailed) hold.
func (e *InitFailedError) Unwrap() error { return ErrInitFailed }

// FingerprintMismatchError is Join's error when the published build's
// fingerprint differs from the joiner's: the joiner would run another suite.
// errors.Is(err, ErrFingerprintMismatch) holds.
type FingerprintMismatchError struct {
	BuildID string
	// Local is the joiner's fingerprint, Published the build's.
	Local, Published string
	// Inputs names the inputs whose digests differ (see fingerprint.Diff);
	// empty when the digests cannot tell.
	Inputs []string
}

func (e *FingerprintMismatchError) Error() string {
	which := "inputs unknown"
	if len(e.Inputs) > 0 {
		which = "differing inputs: " + strings.Join(e.Inputs, ", ")
	}
	return fmt.Sprintf("queue: build %s: fingerprint mismatch: this worker %s, published %s (%s)",
		e.BuildID, orNone(e.Local), orNone(e.Published), which)
}

// Unwrap makes errors.Is(err, ErrFingerprintMismatch) hold.
func (e *FingerprintMismatchError) Unwrap() error { return ErrFingerprintMismatch }

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
