package budget

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Encode returns the unit_state value for s, byte for byte the layout the
// reference writes: {"retry_index":N,"reclaim_count":N,"entered_retry":B}.
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

// DecodeState reads a unit_state value. A missing entered_retry reads as
// false; anything that is not a JSON object with numeric counters is an
// error, since the unit's budget cannot be known from it.
func DecodeState(raw []byte) (State, error) {
	var wire struct {
		RetryIndex   *float64 `json:"retry_index"`
		ReclaimCount *float64 `json:"reclaim_count"`
		EnteredRetry *bool    `json:"entered_retry"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
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
