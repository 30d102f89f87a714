package budget

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Encode returns the unit_state value for s, byte for byte the layout every
// writer of a build uses (docs/design.md#keys):
// {"retry_index":N,"reclaim_count":N,"entered_retry":B}.
func (s State) Encode() []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"retry_index":`...)
	b = strconv.AppendInt(b, s.RetryIndex, 10)
	b = append(b, `,"reclaim_count":`...)
	b = strconv.AppendInt(b, s.ReclaimCount, 10)
	b = append(b, `,"entered_retry":`...)
	b = strconv.AppendBool(b, s.EnteredRetry)
	return append(b, '}')
}

// DecodeState reads a unit_state value, as Redis replies it or as bytes,
// without copying it. A missing entered_retry reads as
// false; anything that is not a JSON object with numeric counters is an
// error, since the unit's budget cannot be known from it.
func DecodeState[T ~string | ~[]byte](raw T) (State, error) {
	if s, ok := decodeStateFast(raw); ok {
		return s, nil
	}
	var wire struct {
		RetryIndex   *float64 `json:"retry_index"`
		ReclaimCount *float64 `json:"reclaim_count"`
		EnteredRetry *bool    `json:"entered_retry"`
	}
	if err := json.Unmarshal([]byte(raw), &wire); err != nil {
		return State{}, fmt.Errorf("budget: unit state %q: %w", raw, err)
	}
	if wire.RetryIndex == nil || wire.ReclaimCount == nil {
		return State{}, fmt.Errorf("budget: unit state %q lacks retry_index or reclaim_count", raw)
	}
	s := State{RetryIndex: int64(*wire.RetryIndex), ReclaimCount: int64(*wire.ReclaimCount)}
	if wire.EnteredRetry != nil {
		s.EnteredRetry = *wire.EnteredRetry
	}
	return s, nil
}

// decodeStateFast reads the exact layout Encode writes, which is every value
// a build holds unless someone wrote it by hand, without encoding/json's
// reflection: every transition reads one.
func decodeStateFast[T ~string | ~[]byte](raw T) (State, bool) {
	var s State
	rest, ok := cutPrefix(raw, `{"retry_index":`)
	if !ok {
		return s, false
	}
	if s.RetryIndex, rest, ok = cutInt(rest); !ok {
		return s, false
	}
	if rest, ok = cutPrefix(rest, `,"reclaim_count":`); !ok {
		return s, false
	}
	if s.ReclaimCount, rest, ok = cutInt(rest); !ok {
		return s, false
	}
	switch string(rest) {
	case `,"entered_retry":true}`:
		s.EnteredRetry = true
	case `,"entered_retry":false}`:
	default:
		return s, false
	}
	return s, true
}

func cutPrefix[T ~string | ~[]byte](b T, prefix string) (T, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}

// cutInt reads a non-negative decimal integer of at most 18 digits.
func cutInt[T ~string | ~[]byte](b T) (int64, T, bool) {
	var n int64
	i := 0
	for ; i < len(b) && i < 18 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	if i == 0 || (i < len(b) && b[i] >= '0' && b[i] <= '9') || (i > 1 && b[0] == '0') {
		return 0, b, false
	}
	return n, b[i:], true
}
