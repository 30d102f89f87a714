package queue

import (
	"errors"
	"fmt"
	"strings"
)

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
