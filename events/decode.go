package events

import (
	"encoding/json"
	"fmt"
)

// Event is one entry of the attempt log read back: every field any event type
// can carry, so the report can scan the log without a type switch per entry.
// Fields an event's type does not carry are left zero.
//
// Fields the log may hold as null are pointers (nil means null or absent):
// unit_id (null in a worker_error outside any unit), previous_worker_id,
// reason and failure_summary. Errors is nil when null or absent, otherwise the
// embedded JSON value as written.
type Event struct {
	Type                string          `json:"type"`
	UnitID              *string         `json:"unit_id"`
	WorkerID            string          `json:"worker_id"`
	RetryIndex          int64           `json:"retry_index"`
	ReclaimCount        int64           `json:"reclaim_count"`
	OwnershipGeneration int64           `json:"ownership_generation"`
	AtMS                int64           `json:"at_ms"`
	PreviousWorkerID    *string         `json:"previous_worker_id"`
	PreviousRetryIndex  int64           `json:"previous_retry_index"`
	Outcome             string          `json:"outcome"`
	DurationMS          float64         `json:"duration_ms"`
	ElapsedMS           float64         `json:"elapsed_ms"`
	Reason              *string         `json:"reason"`
	FailureSummary      *string         `json:"failure_summary"`
	Errors              json.RawMessage `json:"errors"`
	Stream              string          `json:"stream"`
	EntryID             string          `json:"entry_id"`
	NewEntryID          string          `json:"new_entry_id"`
	DeliveryCount       int64           `json:"delivery_count"`
	Operation           string          `json:"operation"` // stale_rejected
	Phase               string          `json:"phase"`     // worker_error
	Class               string          `json:"class"`     // worker_error
	Message             string          `json:"message"`   // worker_error
	Backtrace           []string        `json:"backtrace"` // worker_error
	// Round is the retry round of an event of round 2 and later (0: round
	// 1, whose events carry none); see RoundOf.
	Round int64 `json:"round"`
	// UnitIDs are the units a round_opened event runs again.
	UnitIDs []string `json:"unit_ids"`

	// Raw is the entry exactly as read, for events of types this package does
	// not know and for reports that pass events through (worker errors, stale
	// rejections).
	Raw json.RawMessage `json:"-"`
}

// UnitScoped reports whether the event belongs to a unit in the sense of the
// log queries: a delivered, reclaimed, requeued, abandoned, finalized or
// stale_rejected event with a non-null unit_id.
func (e Event) UnitScoped() bool {
	switch e.Type {
	case TypeDelivered, TypeReclaimed, TypeRequeued, TypeAbandoned, TypeFinalized, TypeStaleRejected:
		return e.UnitID != nil
	}
	return false
}

// known reports whether Decode reads every field of events of type typ.
func known(typ string) bool {
	switch typ {
	case TypeDelivered, TypeReclaimed, TypeRequeued, TypeAbandoned, TypeFinalized, TypeWorkerError, TypeStaleRejected, TypeRoundOpened:
		return true
	}
	return false
}

// Decode reads one attempt-log entry (the "json" field of a stream entry).
//
// Events of the types this package writes are decoded in full; a field of the
// wrong JSON kind for its type is an error. Events of any other type decode
// without error to just Type and Raw, so newer writers can add event types
// without breaking older readers. Bytes that are not a JSON object with a
// non-empty string "type" return ErrMalformedEvent. Raw is a copy: raw may be
// reused by the caller. Safe for concurrent use.
func Decode(raw []byte) (Event, error) {
	obj := trimJSONSpace(raw)
	if !json.Valid(obj) {
		return Event{}, fmt.Errorf("%w: %v", ErrMalformedEvent, syntaxDetail(obj))
	}
	if obj[0] != '{' {
		return Event{}, fmt.Errorf("%w: a JSON %s, not an object", ErrMalformedEvent, kindOf(obj))
	}

	// One pass for the common case: a known type that decodes cleanly.
	var ev Event
	err := json.Unmarshal(obj, &ev)
	if err != nil || !known(ev.Type) {
		var probe struct {
			Type *string `json:"type"`
		}
		if perr := json.Unmarshal(obj, &probe); perr != nil {
			return Event{}, fmt.Errorf("%w: type: %v", ErrMalformedEvent, perr)
		}
		switch {
		case probe.Type == nil || *probe.Type == "":
			return Event{}, fmt.Errorf("%w: no type", ErrMalformedEvent)
		case known(*probe.Type):
			return Event{}, fmt.Errorf("%w: %s event: %v", ErrMalformedEvent, *probe.Type, err)
		}
		ev = Event{Type: *probe.Type}
	}
	if string(ev.Errors) == "null" {
		ev.Errors = nil
	}
	ev.Raw = append(json.RawMessage(nil), raw...)
	return ev, nil
}
