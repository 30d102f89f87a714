package events

import (
	"encoding/json"
	"fmt"
)

// A unit is finalized exactly once, by one of three transitions; each writes
// a "finalized" event with the same leading fields and its own trailing
// ones (docs/design.md#finalize). One type per transition keeps the
// trailing fields from being mixed up.

// Finalized is a worker's own finalize of its reservation: passed, or failed
// for good (reason test_failure).
type Finalized struct {
	Head
	Outcome    string  // OutcomePassed or OutcomeFailed
	DurationMS float64 // the attempt's duration; may be fractional
	// Reason says why a failed unit failed (ReasonTestFailure); empty is
	// written as null.
	Reason string
	// Errors is the attempt's error payload (see EncodeErrors), embedded as a
	// JSON value; empty is written as null, invalid JSON is refused.
	Errors  json.RawMessage
	Stream  string
	EntryID string
}

// RetryBudgetExhausted is a requeue refused because the unit's or the build's
// retry budget is spent: the unit is finalized failed with reason
// retry_budget_exhausted. Head.RetryIndex is the unchanged index.
type RetryBudgetExhausted struct {
	Head
	DurationMS     float64
	Errors         json.RawMessage // as in Finalized
	Stream         string
	EntryID        string
	FailureSummary string // empty is written as null
}

// ReclaimBudgetExhausted is a reclaim refused because the unit has been
// reclaimed max_reclaims times: the unit is finalized failed with reason
// reclaim_budget_exhausted, duration 0 and no errors. Head.ReclaimCount is the
// unchanged count.
type ReclaimBudgetExhausted struct {
	Head
	Stream           string
	EntryID          string
	PreviousWorkerID string // the idle owner; empty when unknown, written as null
	DeliveryCount    int64
}

type wireFinalized struct {
	wireHead
	Outcome    string          `json:"outcome"`
	DurationMS float64         `json:"duration_ms"`
	Reason     *string         `json:"reason"`
	Errors     json.RawMessage `json:"errors"`
	Stream     string          `json:"stream"`
	EntryID    string          `json:"entry_id"`
}

type wireRetryBudgetExhausted struct {
	wireFinalized
	FailureSummary *string `json:"failure_summary"`
}

type wireReclaimBudgetExhausted struct {
	wireFinalized
	PreviousWorkerID *string `json:"previous_worker_id"`
	DeliveryCount    int64   `json:"delivery_count"`
}

// finalized checks and builds the fields finalize_entry writes for every
// variant.
func finalized(h Head, outcome string, durationMS float64, reason string, errs json.RawMessage, stream, entryID string) (wireFinalized, error) {
	wh, err := h.wire(TypeFinalized)
	if err != nil {
		return wireFinalized{}, err
	}
	if outcome != OutcomePassed && outcome != OutcomeFailed {
		return wireFinalized{}, invalid(TypeFinalized, h.UnitID, "outcome %q is neither %q nor %q", outcome, OutcomePassed, OutcomeFailed)
	}
	if err := checkMS(TypeFinalized, h.UnitID, "duration_ms", durationMS); err != nil {
		return wireFinalized{}, err
	}
	raw, err := embedded(TypeFinalized, h.UnitID, errs)
	if err != nil {
		return wireFinalized{}, err
	}
	return wireFinalized{
		wireHead:   wh,
		Outcome:    outcome,
		DurationMS: significant(durationMS),
		Reason:     nullIfEmpty(reason),
		Errors:     raw,
		Stream:     stream,
		EntryID:    entryID,
	}, nil
}

// Encode returns the finalized event as appended to the attempt log: the head,
// then outcome, duration_ms, reason, errors, stream, entry_id. It refuses an
// outcome other than passed or failed, and invalid Errors JSON.
func (e Finalized) Encode() ([]byte, error) {
	w, err := finalized(e.Head, e.Outcome, e.DurationMS, e.Reason, e.Errors, e.Stream, e.EntryID)
	if err != nil {
		return nil, err
	}
	return w.json()
}

// Encode returns the finalized event as appended to the attempt log: the head,
// then outcome "failed", duration_ms, reason "retry_budget_exhausted", errors,
// stream, entry_id, failure_summary.
func (e RetryBudgetExhausted) Encode() ([]byte, error) {
	w, err := finalized(e.Head, OutcomeFailed, e.DurationMS, ReasonRetryBudgetExhausted, e.Errors, e.Stream, e.EntryID)
	if err != nil {
		return nil, err
	}
	return wireRetryBudgetExhausted{w, nullIfEmpty(e.FailureSummary)}.json()
}

// Encode returns the finalized event as appended to the attempt log: the head,
// then outcome "failed", duration_ms 0, reason "reclaim_budget_exhausted",
// errors null, stream, entry_id, previous_worker_id, delivery_count.
func (e ReclaimBudgetExhausted) Encode() ([]byte, error) {
	w, err := finalized(e.Head, OutcomeFailed, 0, ReasonReclaimBudgetExhausted, nil, e.Stream, e.EntryID)
	if err != nil {
		return nil, err
	}
	return wireReclaimBudgetExhausted{w, nullIfEmpty(e.PreviousWorkerID), e.DeliveryCount}.json()
}

func (w wireFinalized) json() ([]byte, error) {
	o := w.open(0)
	return o.bytes()
}

func (w wireRetryBudgetExhausted) json() ([]byte, error) {
	o := w.open(lenOf(w.FailureSummary))
	o.strOrNull("failure_summary", w.FailureSummary)
	return o.bytes()
}

func (w wireReclaimBudgetExhausted) json() ([]byte, error) {
	o := w.open(64)
	o.strOrNull("previous_worker_id", w.PreviousWorkerID)
	o.int("delivery_count", w.DeliveryCount)
	return o.bytes()
}

// open writes the fields every finalized event has, with room for more
// bytes of its own.
func (w wireFinalized) open(more int) jsonOut {
	o := newJSONOut(eventSize(w.wireHead, len(w.Errors)+len(w.Stream)+len(w.EntryID)+lenOf(w.Reason)+more))
	o.head(w.wireHead)
	o.str("outcome", w.Outcome)
	o.float("duration_ms", w.DurationMS)
	o.strOrNull("reason", w.Reason)
	o.raw("errors", w.Errors)
	o.str("stream", w.Stream)
	o.str("entry_id", w.EntryID)
	return o
}

// invalid wraps ErrInvalidEvent with the event type, the unit and the detail.
func invalid(typ, unitID, format string, args ...any) error {
	return fmt.Errorf("%w: %s event for unit %q: %s", ErrInvalidEvent, typ, unitID, fmt.Sprintf(format, args...))
}
