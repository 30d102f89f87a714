package queue

import (
	"math"

	"github.com/hopper-queue/hopper/events"
)

// checkMS refuses a duration in milliseconds the log cannot carry as a
// plain number: NaN, infinite, negative, or from events.MaxMS up (the
// event's encoder would refuse it only after the transition's first round
// trip, and not as a bad argument). what names the duration in the error.
func checkMS(what string, ms float64) error {
	if math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 || ms >= events.MaxMS {
		return errInvalid("%s %v ms is not a non-negative number below 1e21", what, ms)
	}
	return nil
}
