package gorun

import (
	"fmt"
	"strings"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/attempt"
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/worker"
)

// result is what the worker settles of an attempt: its outcome, what go
// test would have printed, its per-test cases, and an error entry that
// names the failed tests (or carries the compiler's output).
func (a ran) result(u Unit, command string) worker.Result {
	res := worker.Result{Outcome: worker.Passed, Duration: a.outcome.Duration, Output: a.out, Tests: a.cases}
	if a.outcome.Passed() {
		return res
	}
	res.Outcome = worker.Failed
	// A signal or a stop says nothing about the unit: never retried.
	res.NoRequeue = a.outcome.Signal != 0 || a.outcome.Cancelled
	e := events.ErrorEntry{ExampleID: u.ID, Description: command, Class: a.outcome.Status(), Backtrace: []string{}}
	if a.argv != nil {
		e.Description = attempt.Quote(a.argv)
	}
	var b strings.Builder
	for _, c := range a.cases {
		if c.Failed() {
			fmt.Fprintf(&b, "%s: %s\n", c.Label(), c.Message)
		}
	}
	switch {
	case a.build:
		e.Class, e.Message = "build failed", attempt.Tail(a.out, events.MaxMessageBytes)
	case b.Len() > 0:
		e.Message = attempt.Tail([]byte(b.String()), events.MaxMessageBytes)
	default:
		e.Message = attempt.Tail(a.out, events.MaxMessageBytes)
	}
	res.Errors = []events.ErrorEntry{e}
	return res
}
