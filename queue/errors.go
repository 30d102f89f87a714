package queue

import (
	"errors"

	"github.com/hopper-queue/hopper/queue/internal/txn"
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
	// its entry carries (see entry_unit_check.go).
	ErrInvalidArgument = errors.New("queue: invalid argument")

	// ErrOutcomeUnknown: the connection broke after the commit was sent, and
	// Redis could not be reached to find out whether it was applied. Reading
	// the build state later tells; the transition must not be repeated blindly.
	ErrOutcomeUnknown = txn.ErrOutcomeUnknown
)

func isStale(err error) bool   { return errors.Is(err, ErrStale) }
func isCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }
