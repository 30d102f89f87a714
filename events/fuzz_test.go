package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
)

// typed turns a decoded event back into the value that encodes it, picking the
// finalized variant from its reason. Prebuilt events are stamped with their
// at_ms, so every branch yields a whole log entry.
func typed(ev events.Event) (func() ([]byte, error), bool) {
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	h := events.Head{UnitID: deref(ev.UnitID), WorkerID: ev.WorkerID, RetryIndex: ev.RetryIndex, ReclaimCount: ev.ReclaimCount, AtMS: ev.AtMS}
	stamp := func(e encoder) func() ([]byte, error) {
		return func() ([]byte, error) {
			b, err := e.Encode()
			if err != nil {
				return nil, err
			}
			return events.StampPrebuilt(b, ev.AtMS)
		}
	}
	switch ev.Type {
	case events.TypeDelivered:
		return events.Delivered{Head: h, Stream: ev.Stream, EntryID: ev.EntryID, DeliveryCount: ev.DeliveryCount}.Encode, true
	case events.TypeReclaimed:
		return events.Reclaimed{Head: h, PreviousWorkerID: deref(ev.PreviousWorkerID), Stream: ev.Stream, EntryID: ev.EntryID, DeliveryCount: ev.DeliveryCount}.Encode, true
	case events.TypeRequeued:
		return events.Requeued{Head: h, DurationMS: ev.DurationMS, FailureSummary: deref(ev.FailureSummary), Errors: ev.Errors, Stream: ev.Stream, EntryID: ev.EntryID, NewEntryID: ev.NewEntryID}.Encode, true
	case events.TypeAbandoned:
		return events.Abandoned{Head: h, ElapsedMS: ev.ElapsedMS, Stream: ev.Stream, EntryID: ev.EntryID}.Encode, true
	case events.TypeFinalized:
		switch deref(ev.Reason) {
		case events.ReasonRetryBudgetExhausted:
			return events.RetryBudgetExhausted{Head: h, DurationMS: ev.DurationMS, Errors: ev.Errors, Stream: ev.Stream, EntryID: ev.EntryID, FailureSummary: deref(ev.FailureSummary)}.Encode, true
		case events.ReasonReclaimBudgetExhausted:
			return events.ReclaimBudgetExhausted{Head: h, Stream: ev.Stream, EntryID: ev.EntryID, PreviousWorkerID: deref(ev.PreviousWorkerID), DeliveryCount: ev.DeliveryCount}.Encode, true
		}
		return events.Finalized{Head: h, Outcome: ev.Outcome, DurationMS: ev.DurationMS, Reason: deref(ev.Reason), Errors: ev.Errors, Stream: ev.Stream, EntryID: ev.EntryID}.Encode, true
	case events.TypeWorkerError:
		return stamp(events.WorkerError{WorkerID: ev.WorkerID, Phase: ev.Phase, UnitID: deref(ev.UnitID), Class: ev.Class, Message: ev.Message, Backtrace: ev.Backtrace}), true
	case events.TypeStaleRejected:
		return stamp(events.StaleRejected{UnitID: deref(ev.UnitID), WorkerID: ev.WorkerID, RetryIndex: ev.RetryIndex, ReclaimCount: ev.ReclaimCount, Operation: ev.Operation, Stream: ev.Stream, EntryID: ev.EntryID, DeliveryCount: ev.DeliveryCount}), true
	}
	return nil, false
}

// FuzzDecode: Decode never panics, accepts only JSON objects with a type, and
// for known types decode -> encode -> decode -> encode reaches a fixed point
// that keeps the head.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := events.Decode(raw)
		if err != nil {
			require.ErrorIsf(t, err, events.ErrMalformedEvent, "got error %v, want %v", err, events.ErrMalformedEvent)
			return
		}
		require.Truef(t, json.Valid(raw), "got an event from invalid JSON %q", raw)
		require.NotEmpty(t, ev.Type)
		require.Equalf(t, string(raw), string(ev.Raw), "got Raw %q, want the input %q", ev.Raw, raw)

		encode1, ok := typed(ev)
		if !ok {
			return // an unknown type: Type and Raw are all there is
		}
		b1, err := encode1()
		if err != nil {
			// Values Decode accepts but Encode refuses (a negative count, an
			// unknown outcome): only this package's errors are allowed.
			require.Truef(t, errors.Is(err, events.ErrInvalidEvent) || errors.Is(err, events.ErrInvalidJSON), "got error %v", err)
			return
		}
		ev2, err := events.Decode(b1)
		require.NoErrorf(t, err, "decoding our own %s", b1)
		encode2, _ := typed(ev2)
		b2, err := encode2()
		require.NoError(t, err)
		require.Equalf(t, string(b1), string(b2), "got %s on the second round, want %s", b2, b1)

		require.Equal(t, ev.Type, ev2.Type)
		require.Equal(t, ev.UnitID, ev2.UnitID)
		require.Equal(t, ev.WorkerID, ev2.WorkerID)
		require.Equal(t, ev.AtMS, ev2.AtMS)
		require.Equal(t, ev.RetryIndex, ev2.RetryIndex)
		require.Equal(t, ev.ReclaimCount, ev2.ReclaimCount)
		if ev.Type != events.TypeWorkerError {
			require.Equalf(t, 1+ev.RetryIndex+ev.ReclaimCount, ev2.OwnershipGeneration, "got ownership_generation %d, want %d", ev2.OwnershipGeneration, 1+ev.RetryIndex+ev.ReclaimCount)
		}
	})
}

// lastKey returns the last key of a JSON object and its value.
func lastKey(t testing.TB, b []byte) (string, json.RawMessage) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equalf(t, json.Delim('{'), tok, "got %v, want an object", tok)
	var key string
	var value json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		key = tok.(string)
		require.NoError(t, dec.Decode(&value))
	}
	return key, value
}

// FuzzStampPrebuilt: the result is the caller's object, verbatim, with at_ms
// as its last key; or an error for anything that is not a JSON object.
func FuzzStampPrebuilt(f *testing.F) {
	f.Fuzz(func(t *testing.T, event []byte, atMS int64) {
		out, err := events.StampPrebuilt(event, atMS)
		trimmed := bytes.Trim(event, " \t\r\n")
		isObject := json.Valid(trimmed) && trimmed[0] == '{'
		if err != nil {
			require.Falsef(t, isObject, "got error %v for the object %q", err, event)
			require.Truef(t, errors.Is(err, events.ErrInvalidJSON) || errors.Is(err, events.ErrNotObject), "got error %v", err)
			require.Nil(t, out)
			return
		}
		require.Truef(t, isObject, "got %q from a non-object %q", out, event)
		require.Truef(t, json.Valid(out), "got invalid JSON %q", out)
		require.Truef(t, bytes.HasPrefix(out, trimmed[:len(trimmed)-1]), "got %q, want the caller's bytes %q kept", out, trimmed)
		key, value := lastKey(t, out)
		require.Equal(t, "at_ms", key)
		var got int64
		require.NoError(t, json.Unmarshal(value, &got))
		require.Equalf(t, atMS, got, "got at_ms %d, want %d", got, atMS)
	})
}

// FuzzEncodeDecode: whatever the field values, an event either encodes to
// bytes that decode back to the same values, or is refused with one of this
// package's errors.
func FuzzEncodeDecode(f *testing.F) {
	f.Add("./spec/a_spec.rb", "ci-7.2", int64(1), int64(2), int64(1733143440123), 1500.0, "1 failure", []byte(payload))
	f.Add("u<&>", "w", int64(0), int64(0), int64(0), 0.5, "", []byte(nil))
	f.Add("bad \xff", "w", int64(3), int64(0), int64(-1), -0.0, "\u2028", []byte(" null "))
	f.Add("u", "w", int64(math.MaxInt64), int64(0), int64(5), math.NaN(), "s", []byte("[1,"))
	f.Fuzz(func(t *testing.T, unitID, workerID string, retryIndex, reclaimCount, atMS int64, durationMS float64, summary string, errs []byte) {
		h := events.Head{UnitID: unitID, WorkerID: workerID, RetryIndex: retryIndex, ReclaimCount: reclaimCount, AtMS: atMS}
		valid := func(s string) string { return string([]rune(s)) } // how encoding/json repairs invalid UTF-8
		orNil := func(s string) *string {
			if s == "" {
				return nil
			}
			s = valid(s)
			return &s
		}
		var wantErrors json.RawMessage
		if len(errs) > 0 && json.Valid(errs) {
			var buf bytes.Buffer
			require.NoError(t, json.Compact(&buf, errs))
			if buf.String() != "null" {
				wantErrors = buf.Bytes()
			}
		}

		for _, e := range []encoder{
			events.Requeued{Head: h, DurationMS: durationMS, FailureSummary: summary, Errors: errs, Stream: "units", EntryID: "1-0", NewEntryID: "2-0"},
			events.RetryBudgetExhausted{Head: h, DurationMS: durationMS, Errors: errs, Stream: "units", EntryID: "1-0", FailureSummary: summary},
			events.Finalized{Head: h, Outcome: events.OutcomeFailed, DurationMS: durationMS, Reason: summary, Errors: errs, Stream: "units", EntryID: "1-0"},
			events.Reclaimed{Head: h, PreviousWorkerID: summary, Stream: "units", EntryID: "1-0", DeliveryCount: atMS},
		} {
			b, err := e.Encode()
			if err != nil {
				require.Truef(t, errors.Is(err, events.ErrInvalidEvent) || errors.Is(err, events.ErrInvalidJSON), "got error %v", err)
				continue
			}
			ev, err := events.Decode(b)
			require.NoErrorf(t, err, "decoding our own %s", b)
			require.Equal(t, valid(unitID), *ev.UnitID)
			require.Equal(t, valid(workerID), ev.WorkerID)
			require.Equal(t, retryIndex, ev.RetryIndex)
			require.Equal(t, reclaimCount, ev.ReclaimCount)
			require.Equal(t, 1+retryIndex+reclaimCount, ev.OwnershipGeneration)
			require.Equal(t, atMS, ev.AtMS)
			switch e.(type) {
			case events.Requeued:
				require.Equal(t, retryIndex-1, ev.PreviousRetryIndex)
				require.Equal(t, roundedMS(durationMS), ev.DurationMS, "durations keep events.Significant digits")
				require.Equal(t, orNil(summary), ev.FailureSummary)
				require.Equalf(t, string(wantErrors), string(ev.Errors), "got errors %s, want %s", ev.Errors, wantErrors)
			case events.RetryBudgetExhausted:
				require.Equal(t, roundedMS(durationMS), ev.DurationMS, "durations keep events.Significant digits")
				require.Equal(t, orNil(summary), ev.FailureSummary)
				require.Equal(t, events.ReasonRetryBudgetExhausted, *ev.Reason)
				require.Equalf(t, string(wantErrors), string(ev.Errors), "got errors %s, want %s", ev.Errors, wantErrors)
			case events.Finalized:
				require.Equal(t, orNil(summary), ev.Reason)
				require.Equal(t, events.OutcomeFailed, ev.Outcome)
			case events.Reclaimed:
				require.Equal(t, orNil(summary), ev.PreviousWorkerID)
				require.Equal(t, atMS, ev.DeliveryCount)
			}
		}
	})
}

// roundedMS is what the log keeps of a duration: events.Significant digits.
func roundedMS(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', events.Significant, 64), 64)
	return r
}
