package report

import (
	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/events"
)

// ReasonShown is how the console and hopper status name the reason a unit
// failed. A build whose retry budget is zero (max_requeues 0, or a
// tolerance that lets no unit retry) finalizes every failure through the
// retry budget's check, as retry_budget_exhausted: true, but it reads as
// though retries had been tried and used up. With retries off it is shown
// as "failed"; the attempt log and the JSON summary keep the log's word.
func ReasonShown(reason string, m *Meta) string {
	if reason == events.ReasonRetryBudgetExhausted && RetriesOff(m) {
		return "failed"
	}
	return reason
}

// RetriesOff reports whether m's frozen budgets let no unit be retried.
// A meta without them (nil, or fields missing) counts as retries on: the
// log's reason is then shown as it is.
func RetriesOff(m *Meta) bool {
	if m == nil {
		return false
	}
	maxRequeues, ok := budget.Number(m.Fields["max_requeues"])
	if !ok {
		return false
	}
	tolerance, ok := budget.Number(m.Fields["requeue_tolerance"])
	if !ok {
		return false
	}
	return maxRequeues == 0 || budget.MaxRequeuedUnits(m.TotalUnits, tolerance) == 0
}
