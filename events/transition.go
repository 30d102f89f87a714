package events

import "encoding/json"

// Delivered records a reservation read from a unit stream and accounted for
// (the delivery_accounting transition).
type Delivered struct {
	Head
	Stream        string // short stream name: "units" or "units:priority"
	EntryID       string // the unit's entry in Stream
	DeliveryCount int64  // from XPENDING, after this delivery
}

type wireDelivered struct {
	wireHead
	Stream        string `json:"stream"`
	EntryID       string `json:"entry_id"`
	DeliveryCount int64  `json:"delivery_count"`
}

// Encode returns the delivered event as appended to the attempt log:
// the head, then stream, entry_id, delivery_count.
func (e Delivered) Encode() ([]byte, error) {
	h, err := e.Head.wire(TypeDelivered)
	if err != nil {
		return nil, err
	}
	return wireDelivered{h, e.Stream, e.EntryID, e.DeliveryCount}.json()
}

func (w wireDelivered) json() ([]byte, error) {
	o := newJSONOut(eventSize(w.wireHead, len(w.Stream)+len(w.EntryID)))
	o.head(w.wireHead)
	o.str("stream", w.Stream)
	o.str("entry_id", w.EntryID)
	o.int("delivery_count", w.DeliveryCount)
	return o.bytes()
}

// Reclaimed records a unit taken over from an idle owner (the reclaim
// transition, within the reclaim budget). Head.ReclaimCount is the count after
// this reclaim.
type Reclaimed struct {
	Head
	// PreviousWorkerID is the owner the entry was claimed from; empty when it
	// is not known, written as null.
	PreviousWorkerID string
	Stream           string
	EntryID          string
	DeliveryCount    int64
}

type wireReclaimed struct {
	wireHead
	PreviousWorkerID *string `json:"previous_worker_id"`
	Stream           string  `json:"stream"`
	EntryID          string  `json:"entry_id"`
	DeliveryCount    int64   `json:"delivery_count"`
}

// Encode returns the reclaimed event as appended to the attempt log: the head,
// then previous_worker_id, stream, entry_id, delivery_count.
func (e Reclaimed) Encode() ([]byte, error) {
	h, err := e.Head.wire(TypeReclaimed)
	if err != nil {
		return nil, err
	}
	return wireReclaimed{h, nullIfEmpty(e.PreviousWorkerID), e.Stream, e.EntryID, e.DeliveryCount}.json()
}

func (w wireReclaimed) json() ([]byte, error) {
	o := newJSONOut(eventSize(w.wireHead, len(w.Stream)+len(w.EntryID)+64))
	o.head(w.wireHead)
	o.strOrNull("previous_worker_id", w.PreviousWorkerID)
	o.str("stream", w.Stream)
	o.str("entry_id", w.EntryID)
	o.int("delivery_count", w.DeliveryCount)
	return o.bytes()
}

// Requeued records a failed attempt put back on the priority stream (the
// requeue transition, within the retry budget). Head.RetryIndex is the index
// after the requeue, at least 1; previous_retry_index is written as one less,
// so the two can never disagree.
type Requeued struct {
	Head
	DurationMS float64 // the attempt's duration; may be fractional
	// FailureSummary is the worker's one-line summary; empty is written as null.
	FailureSummary string
	// Errors is the attempt's error payload (see EncodeErrors), embedded as a
	// JSON value; empty is written as null, invalid JSON is refused.
	Errors     json.RawMessage
	Stream     string // the stream the failed attempt came from
	EntryID    string // the failed attempt's entry, now acknowledged
	NewEntryID string // the unit's new entry in "units:priority"
}

type wireRequeued struct {
	wireHead
	PreviousRetryIndex int64           `json:"previous_retry_index"`
	DurationMS         float64         `json:"duration_ms"`
	FailureSummary     *string         `json:"failure_summary"`
	Errors             json.RawMessage `json:"errors"`
	Stream             string          `json:"stream"`
	EntryID            string          `json:"entry_id"`
	NewEntryID         string          `json:"new_entry_id"`
}

// Encode returns the requeued event as appended to the attempt log: the head,
// then previous_retry_index, duration_ms, failure_summary, errors, stream,
// entry_id, new_entry_id. It refuses a RetryIndex below 1 (a requeue always
// increments it) and invalid Errors JSON.
func (e Requeued) Encode() ([]byte, error) {
	h, err := e.Head.wire(TypeRequeued)
	if err != nil {
		return nil, err
	}
	if e.RetryIndex < 1 {
		return nil, invalid(TypeRequeued, e.UnitID, "retry_index %d after a requeue is below 1", e.RetryIndex)
	}
	if err := checkMS(TypeRequeued, e.UnitID, "duration_ms", e.DurationMS); err != nil {
		return nil, err
	}
	errs, err := embedded(TypeRequeued, e.UnitID, e.Errors)
	if err != nil {
		return nil, err
	}
	return wireRequeued{
		wireHead:           h,
		PreviousRetryIndex: e.RetryIndex - 1,
		DurationMS:         significant(e.DurationMS),
		FailureSummary:     nullIfEmpty(e.FailureSummary),
		Errors:             errs,
		Stream:             e.Stream,
		EntryID:            e.EntryID,
		NewEntryID:         e.NewEntryID,
	}.json()
}

func (w wireRequeued) json() ([]byte, error) {
	o := newJSONOut(eventSize(w.wireHead, len(w.Errors)+len(w.Stream)+len(w.EntryID)+len(w.NewEntryID)+lenOf(w.FailureSummary)))
	o.head(w.wireHead)
	o.int("previous_retry_index", w.PreviousRetryIndex)
	o.float("duration_ms", w.DurationMS)
	o.strOrNull("failure_summary", w.FailureSummary)
	o.raw("errors", w.Errors)
	o.str("stream", w.Stream)
	o.str("entry_id", w.EntryID)
	o.str("new_entry_id", w.NewEntryID)
	return o.bytes()
}

// Abandoned records that a unit ran past max_unit_duration: its owner stops
// renewing so another worker may reclaim it later.
type Abandoned struct {
	Head
	ElapsedMS float64 // how long the unit had run; may be fractional
	Stream    string
	EntryID   string
}

type wireAbandoned struct {
	wireHead
	ElapsedMS float64 `json:"elapsed_ms"`
	Stream    string  `json:"stream"`
	EntryID   string  `json:"entry_id"`
}

// Encode returns the abandoned event as appended to the attempt log: the head,
// then elapsed_ms, stream, entry_id.
func (e Abandoned) Encode() ([]byte, error) {
	h, err := e.Head.wire(TypeAbandoned)
	if err != nil {
		return nil, err
	}
	if err := checkMS(TypeAbandoned, e.UnitID, "elapsed_ms", e.ElapsedMS); err != nil {
		return nil, err
	}
	return wireAbandoned{h, significant(e.ElapsedMS), e.Stream, e.EntryID}.json()
}

func (w wireAbandoned) json() ([]byte, error) {
	o := newJSONOut(eventSize(w.wireHead, len(w.Stream)+len(w.EntryID)))
	o.head(w.wireHead)
	o.float("elapsed_ms", w.ElapsedMS)
	o.str("stream", w.Stream)
	o.str("entry_id", w.EntryID)
	return o.bytes()
}
