package worker_test

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
)

// A failed attempt that described no failure is retried without a count
// it never gave: no "1 failure(s)" in the log line or the requeued event
// (issue 43: one was added to results that counted none). One that
// described two says 2.
func TestRequeueInventsNoFailureCount(t *testing.T) {
	client := newClient(t)
	for _, tc := range []struct {
		name    string
		errs    []events.ErrorEntry
		summary string
	}{
		{"none described", nil, ""},
		{"two described", []events.ErrorEntry{{Class: "FAIL", Message: "a"}, {Class: "FAIL", Message: "b"}}, "2 failure(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log syncBuffer
			id := buildID(t)
			cfg := worker.Config{BuildID: id, WorkerID: "w1", MaxRequeues: 1, RequeueTolerance: 1, Log: &log, Output: io.Discard}
			var attempts atomic.Int32
			err := worker.Run(t.Context(), client, worker.Suite{Units: []string{"u1"}}, cfg, func(context.Context, queue.Reservation) worker.Result {
				if attempts.Add(1) == 1 {
					return worker.Result{Outcome: worker.Failed, Errors: tc.errs}
				}
				return worker.Result{Outcome: worker.Passed}
			})
			if err != nil {
				t.Fatal(err)
			}
			want := "Retrying u1 (retry 1 of 1; next attempt 2)"
			if tc.summary != "" {
				want += ": " + tc.summary
			}
			if !strings.Contains(log.String(), want+"\n") {
				t.Errorf("log %q lacks the line %q", log.String(), want)
			}
			r, err := report.Run(t.Context(), client, id, report.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got *string
			for _, e := range r.Log.Events() {
				if e.Type == events.TypeRequeued {
					got = e.FailureSummary
				}
			}
			switch {
			case tc.summary == "" && got != nil:
				t.Errorf("requeued event's failure_summary = %q, want none", *got)
			case tc.summary != "" && (got == nil || *got != tc.summary):
				t.Errorf("requeued event's failure_summary = %v, want %q", got, tc.summary)
			}
		})
	}
}
