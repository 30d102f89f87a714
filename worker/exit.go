package worker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hopper-queue/hopper/queue"
)

// Errors of Run besides the queue's and ctx's; check them with errors.Is.
var (
	// ErrAborted: a unit ran past MaxUnitDuration+Timeout. Its context was
	// cancelled and Run returned without waiting for it (exit code 4).
	ErrAborted = errors.New("worker: aborted")
	// ErrHeartbeatLost: the heartbeat failed for longer than Timeout, so the
	// unit may have been reclaimed; the worker gave up once the unit ended,
	// without settling it (exit code 2).
	ErrHeartbeatLost = errors.New("worker: heartbeat lost")
)

// stopError is how Run reports ErrAborted and ErrHeartbeatLost: its message
// names the worker once ("worker w1: aborted: ..."), where wrapping the
// sentinel would repeat the package's prefix after the worker's ("worker
// w1: worker: aborted: ..."), and a command prints its own name before it
// all. errors.Is finds the sentinel.
type stopError struct {
	kind error
	msg  string
}

func (e *stopError) Error() string { return e.msg }
func (e *stopError) Unwrap() error { return e.kind }

// stopErrorf builds a stopError of kind for worker id, saying what the
// sentinel says without its "worker: " prefix, then format.
func stopErrorf(kind error, id, format string, args ...any) error {
	what := strings.TrimPrefix(kind.Error(), "worker: ")
	return &stopError{kind: kind, msg: "worker " + id + ": " + what + ": " + fmt.Sprintf(format, args...)}
}

// Exit codes of a worker process (docs/cli.md#exit-codes). A worker never
// exits 1 or 3: test failures and incomplete builds are the report's to tell.
const (
	ExitOK             = 0
	ExitInfrastructure = 2
	ExitAborted        = 4
)

// ExitCode maps Run's error to the process exit code: 0 for
// nil (the build is complete, whatever the tests did), 4 for ErrAborted, 2
// for anything else (Redis unreachable, a corrupt or burnt build, a
// fingerprint mismatch, init failure, a stopped worker).
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrAborted):
		return ExitAborted
	}
	return ExitInfrastructure
}

// errorClass names an error for a worker_error event: the sentinel it
// wraps when it is one of ours, else its Go type.
func errorClass(err error) string {
	for _, s := range []struct {
		err  error
		name string
	}{
		{queue.ErrCorrupt, "queue.ErrCorrupt"},
		{queue.ErrContention, "queue.ErrContention"},
		{queue.ErrOutcomeUnknown, "queue.ErrOutcomeUnknown"},
		{queue.ErrFingerprintMismatch, "queue.ErrFingerprintMismatch"},
		{ErrHeartbeatLost, "worker.ErrHeartbeatLost"},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return typeName(err)
		}
		err = next
	}
}
