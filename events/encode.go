package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Head is what every unit-scoped event starts with: whose unit, which worker,
// the unit's budget counters and when (server time, epoch milliseconds).
//
// RetryIndex and ReclaimCount are the unit's counters as they stand after the
// transition (a reclaimed event carries the incremented reclaim count, a
// requeued event the incremented retry index).
// ownership_generation is not a field: it is always derived from the two.
type Head struct {
	UnitID       string
	WorkerID     string
	RetryIndex   int64
	ReclaimCount int64
	AtMS         int64
}

// OwnershipGeneration is 1 + RetryIndex + ReclaimCount: it grows by one each
// time the unit changes hands, so two attempts of a unit never share it.
func (h Head) OwnershipGeneration() int64 {
	return 1 + h.RetryIndex + h.ReclaimCount
}

// wireHead is Head as written, in append_event's key order.
type wireHead struct {
	Type                string `json:"type"`
	UnitID              string `json:"unit_id"`
	WorkerID            string `json:"worker_id"`
	RetryIndex          int64  `json:"retry_index"`
	ReclaimCount        int64  `json:"reclaim_count"`
	OwnershipGeneration int64  `json:"ownership_generation"`
	AtMS                int64  `json:"at_ms"`
}

func (h Head) wire(typ string) (wireHead, error) {
	if h.UnitID == "" {
		return wireHead{}, fmt.Errorf("%w: %s event has no unit id", ErrInvalidEvent, typ)
	}
	if h.WorkerID == "" {
		return wireHead{}, fmt.Errorf("%w: %s event for unit %q has no worker id", ErrInvalidEvent, typ, h.UnitID)
	}
	if err := checkCounters(h.RetryIndex, h.ReclaimCount); err != nil {
		return wireHead{}, invalid(typ, h.UnitID, "%v", err)
	}
	return wireHead{
		Type:                typ,
		UnitID:              h.UnitID,
		WorkerID:            h.WorkerID,
		RetryIndex:          h.RetryIndex,
		ReclaimCount:        h.ReclaimCount,
		OwnershipGeneration: h.OwnershipGeneration(),
		AtMS:                h.AtMS,
	}, nil
}

// checkCounters refuses counters that unit_state can never hold, and those
// whose ownership generation would overflow.
func checkCounters(retryIndex, reclaimCount int64) error {
	switch {
	case retryIndex < 0:
		return fmt.Errorf("retry_index %d is negative", retryIndex)
	case reclaimCount < 0:
		return fmt.Errorf("reclaim_count %d is negative", reclaimCount)
	case retryIndex > math.MaxInt64-1-reclaimCount:
		return fmt.Errorf("ownership_generation of retry_index %d and reclaim_count %d overflows int64", retryIndex, reclaimCount)
	}
	return nil
}

// MaxMS bounds durations: encoding/json prints magnitudes from 1e21 up with an
// exponent, and the log's integral durations must read as plain integers.
// Callers check against it before they send anything (queue does).
const MaxMS = 1e21

// checkMS refuses durations JSON cannot carry (NaN, infinities) and those it
// would print with an exponent (some 30 billion years and more).
func checkMS(typ, unitID, key string, ms float64) error {
	if math.IsNaN(ms) || math.IsInf(ms, 0) || math.Abs(ms) >= MaxMS {
		return invalid(typ, unitID, "%s %v is not a finite number of milliseconds below 1e21", key, ms)
	}
	return nil
}

// embedded returns the caller's JSON to embed as a value, or nil (written as
// null) when it is empty. Invalid JSON is refused: appended verbatim, it
// would corrupt the log line.
func embedded(typ, unitID string, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: errors of %s event for unit %q: %v", ErrInvalidJSON, typ, unitID, syntaxDetail(raw))
	}
	return raw, nil
}

// syntaxDetail says why b is not valid JSON; json.Valid only says that it is not.
func syntaxDetail(b []byte) error {
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return fmt.Errorf("not valid JSON")
}

// nullIfEmpty writes an empty string as null.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// marshal encodes v compactly without HTML escaping, so unit ids, messages and
// backtraces read in the log as they were written. encoding/json caches each
// wire type's encoder, so the per-call cost is one buffer.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(256)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode ends every value with a newline.
}

// trimJSONSpace trims the four whitespace bytes JSON allows around a value.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// kindOf names the kind of a valid JSON value from its first byte.
func kindOf(b []byte) string {
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// Significant is the number of significant digits a duration keeps in the
// log: 14, as many as the transition script hopper replaces writes, so that
// a reader sees the same value whichever of the two wrote the event.
const Significant = 14

// significant rounds v to Significant digits.
func significant(v float64) float64 {
	if v == math.Trunc(v) && math.Abs(v) < 1e14 {
		return v // whole and under 14 digits: rounding keeps it, no text needed
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', Significant, 64), 64)
	if err != nil {
		return v
	}
	return r
}
