package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/testresults"
)

// Func runs one attempt at a unit. It must return when ctx ends: the worker
// cancels ctx when it stops or aborts. r says which unit and which attempt
// (r.RetryIndex counts earlier failed attempts, r.ReclaimCount takeovers).
// Many Funcs may run at once when several workers share a process.
type Func func(ctx context.Context, r queue.Reservation) Result

// Outcome is how an attempt went.
type Outcome string

// Outcomes of an attempt. Anything but Passed counts as failed: a unit never
// passes by omission.
const (
	Passed Outcome = events.OutcomePassed
	Failed Outcome = events.OutcomeFailed
)

// Result is what one attempt at a unit produced.
type Result struct {
	Outcome Outcome
	// Duration is how long the attempt ran; zero (or negative) means
	// measured by the worker around the Func.
	Duration time.Duration
	// Errors describe the failures (capped as events.EncodeErrors says).
	Errors []events.ErrorEntry
	// NoRequeue marks a failure that says nothing about the unit (the run
	// was interrupted, the command killed by a signal): it is finalized as
	// failed with reason test_failure instead of retried. The zero value
	// lets the build's retry budget decide.
	NoRequeue bool
	// Output is the attempt's buffered output, written to Config.Output
	// only if this attempt's result counts (not when it is retried or
	// discarded as stale).
	Output []byte
	// Tests are the attempt's per-test results, when its command gave any
	// (see package testresults). They are kept with the attempt, bounded to
	// testresults.DefaultLimit, when its settlement commits.
	Tests []testresults.Case
}

func (r Result) passed() bool { return r.Outcome == Passed }

// failureSummary counts the failures the attempt reported, "" when it
// reported none: a failed command that described no failure is not given
// a count it never made.
func (r Result) failureSummary() string {
	if len(r.Errors) == 0 {
		return ""
	}
	return fmt.Sprintf("%d failure(s)", len(r.Errors))
}

// colond is s after ": ", or "" when s is.
func colond(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
