package budget

import "math"

// State is a unit's budget state, the value of its unit_state field.
type State struct {
	RetryIndex   int64 `json:"retry_index"`
	ReclaimCount int64 `json:"reclaim_count"`
	EnteredRetry bool  `json:"entered_retry"`
}

// OwnershipGeneration counts the owners a unit has had: the first delivery,
// each retry and each reclaim. Events carry it so a reader can order attempts.
func (s State) OwnershipGeneration() int64 {
	return 1 + s.RetryIndex + s.ReclaimCount
}

// MaxRequeuedUnits is how many distinct units may enter retry in a build of
// total units under tolerance (0..1): ceil(total × tolerance), never negative.
// The product is nudged down by 1e-9 before rounding up, so that binary
// floating point does not turn 100 × 0.7 (70.00000000000001) into 71.
func MaxRequeuedUnits(total int64, tolerance float64) int64 {
	n := math.Ceil(float64(total)*tolerance - 1e-9)
	if n < 0 || math.IsNaN(n) {
		return 0
	}
	return int64(n)
}

// Requeue holds what a requeue decision reads besides the unit's state: the
// build's caps and how many units have entered retry so far.
type Requeue struct {
	MaxRequeues   float64 // retries allowed per unit
	Tolerance     float64 // share of the build's units that may enter retry
	TotalUnits    int64
	RequeuedUnits int64 // units that entered retry so far (meta requeued_units_count)
}

// RequeueDecision is what a failed attempt leads to.
type RequeueDecision struct {
	// Requeue is false when the budget is spent: the unit is finalized as
	// failed with reason retry_budget_exhausted.
	Requeue bool
	// EntersRetry is true when this requeue is the unit's first: the build's
	// requeued units count goes up by one.
	EntersRetry bool
}

// DecideRequeue applies the per-unit cap (retry_index + 1 must not pass
// MaxRequeues) and, for a unit not yet in retry, the build-wide tolerance
// (the units already in retry must be fewer than MaxRequeuedUnits). A unit
// already in retry is never stopped by the tolerance: it was counted once.
func DecideRequeue(s State, r Requeue) RequeueDecision {
	overUnitCap := float64(s.RetryIndex+1) > r.MaxRequeues
	overTolerance := !s.EnteredRetry && r.RequeuedUnits >= MaxRequeuedUnits(r.TotalUnits, r.Tolerance)
	if overUnitCap || overTolerance {
		return RequeueDecision{}
	}
	return RequeueDecision{Requeue: true, EntersRetry: !s.EnteredRetry}
}

// After returns the unit's state once d is applied.
func (d RequeueDecision) After(s State) State {
	if !d.Requeue {
		return s
	}
	s.RetryIndex++
	s.EnteredRetry = true
	return s
}

// ReclaimExhausted reports whether taking the unit from its lost owner once
// more would pass maxReclaims: then the unit is finalized as failed with
// reason reclaim_budget_exhausted instead of handed to a new owner. Reclaims
// never spend retry budget.
func ReclaimExhausted(s State, maxReclaims float64) bool {
	return float64(s.ReclaimCount+1) > maxReclaims
}
