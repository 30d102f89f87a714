package budget

import (
	"math"
	"strconv"
	"strings"
)

// Frozen returns the budget a build froze into its meta when it was
// published, so that every worker enforces the same cap; the worker's own
// value is only the fallback for a meta that lacks the field (or holds
// something that is not a finite number).
func Frozen(metaValue string, present bool, fallback float64) float64 {
	if !present {
		return fallback
	}
	if v, ok := Number(metaValue); ok {
		return v
	}
	return fallback
}

// Number parses a stored number the way the build's writers store them
// ("3", "0.7", " 12 "). NaN and infinities are refused: a budget must be a
// number one can compare against.
func Number(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// Count parses a stored counter (total_units, requeued_units_count); a
// missing or unreadable one counts as zero.
func Count(s string, present bool) int64 {
	if !present {
		return 0
	}
	v, ok := Number(s)
	if !ok {
		return 0
	}
	return int64(v)
}
