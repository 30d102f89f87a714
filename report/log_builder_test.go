package report_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
)

// logBuilder writes an attempt log by hand, one event per call, through the
// events package's encoders and back through events.Decode, so that the
// queries see exactly what they would read from Redis.
type logBuilder struct {
	t   testing.TB
	at  int64
	evs []events.Event
}

func newLog(t testing.TB) *logBuilder {
	t.Helper()
	return &logBuilder{t: t, at: 1_733_143_440_000}
}

type encoder interface{ Encode() ([]byte, error) }

func (b *logBuilder) add(e encoder) *logBuilder {
	b.t.Helper()
	raw, err := e.Encode()
	require.NoError(b.t, err, "encoding %#v", e)
	return b.raw(string(raw))
}

// raw appends an entry as written, for types the events package does not
// encode (prebuilt events get at_ms stamped as the transitions do).
func (b *logBuilder) raw(line string) *logBuilder {
	b.t.Helper()
	ev, err := events.Decode([]byte(line))
	require.NoError(b.t, err, "decoding %s", line)
	b.evs = append(b.evs, ev)
	b.at++
	return b
}

func (b *logBuilder) head(unit, worker string) events.Head {
	return events.Head{UnitID: unit, WorkerID: worker, AtMS: b.at}
}

func (b *logBuilder) delivered(unit, worker string) *logBuilder {
	b.t.Helper()
	return b.add(events.Delivered{Head: b.head(unit, worker), Stream: "units", EntryID: "1-0", DeliveryCount: 1})
}

func (b *logBuilder) reclaimed(unit, worker, from string) *logBuilder {
	b.t.Helper()
	h := b.head(unit, worker)
	h.ReclaimCount = 1
	return b.add(events.Reclaimed{Head: h, PreviousWorkerID: from, Stream: "units", EntryID: "1-0", DeliveryCount: 2})
}

func (b *logBuilder) requeued(unit, worker string, retry int64) *logBuilder {
	b.t.Helper()
	h := b.head(unit, worker)
	h.RetryIndex = retry
	return b.add(events.Requeued{Head: h, DurationMS: 250, FailureSummary: "1 failure", Stream: "units", EntryID: "1-0", NewEntryID: "2-0"})
}

func (b *logBuilder) abandoned(unit, worker string) *logBuilder {
	b.t.Helper()
	return b.add(events.Abandoned{Head: b.head(unit, worker), ElapsedMS: 900000, Stream: "units", EntryID: "1-0"})
}

func (b *logBuilder) passed(unit, worker string, durationMS float64) *logBuilder {
	b.t.Helper()
	return b.add(events.Finalized{Head: b.head(unit, worker), Outcome: events.OutcomePassed, DurationMS: durationMS, Stream: "units", EntryID: "1-0"})
}

func (b *logBuilder) failed(unit, worker string, durationMS float64, errs ...events.ErrorEntry) *logBuilder {
	b.t.Helper()
	var payload json.RawMessage
	if errs != nil {
		payload = events.EncodeErrors(errs)
	}
	return b.add(events.Finalized{
		Head: b.head(unit, worker), Outcome: events.OutcomeFailed, DurationMS: durationMS,
		Reason: events.ReasonTestFailure, Errors: payload, Stream: "units", EntryID: "1-0",
	})
}

func (b *logBuilder) retryExhausted(unit, worker string, retry int64, errs ...events.ErrorEntry) *logBuilder {
	b.t.Helper()
	h := b.head(unit, worker)
	h.RetryIndex = retry
	return b.add(events.RetryBudgetExhausted{Head: h, DurationMS: 300, Errors: events.EncodeErrors(errs), Stream: "units:priority", EntryID: "3-0", FailureSummary: "1 failure"})
}

func (b *logBuilder) reclaimExhausted(unit, worker, from string) *logBuilder {
	b.t.Helper()
	h := b.head(unit, worker)
	h.ReclaimCount = 3
	return b.add(events.ReclaimBudgetExhausted{Head: h, Stream: "units", EntryID: "1-0", PreviousWorkerID: from, DeliveryCount: 5})
}

func (b *logBuilder) workerError(worker, phase, class, message string) *logBuilder {
	b.t.Helper()
	raw, err := events.WorkerError{WorkerID: worker, Phase: phase, Class: class, Message: message, Backtrace: []string{"main.go:1"}}.Encode()
	require.NoError(b.t, err)
	stamped, err := events.StampPrebuilt(raw, b.at)
	require.NoError(b.t, err)
	return b.raw(string(stamped))
}

func (b *logBuilder) stale(unit, worker, operation string) *logBuilder {
	b.t.Helper()
	raw, err := events.StaleRejected{UnitID: unit, WorkerID: worker, Operation: operation, Stream: "units", EntryID: "1-0", DeliveryCount: 1}.Encode()
	require.NoError(b.t, err)
	stamped, err := events.StampPrebuilt(raw, b.at)
	require.NoError(b.t, err)
	return b.raw(string(stamped))
}

func (b *logBuilder) events() []events.Event { return b.evs }

func boom(class, message string) events.ErrorEntry {
	return events.ErrorEntry{ExampleID: "x[1:1]", Description: "does a thing", Class: class, Message: message, Backtrace: []string{"x_test.go:3", "x_test.go:9"}}
}

func ptr(s string) *string { return &s }
