package events

import "errors"

// Event types: the value of the "type" key of every entry in the attempt log.
const (
	TypeDelivered     = "delivered"
	TypeReclaimed     = "reclaimed"
	TypeRequeued      = "requeued"
	TypeAbandoned     = "abandoned"
	TypeFinalized     = "finalized"
	TypeWorkerError   = "worker_error"
	TypeStaleRejected = "stale_rejected"
)

// Outcomes of a finalized unit. The report's verdict is built from these, so
// Finalized refuses any other value rather than let a typo read as "not failed".
const (
	OutcomePassed = "passed"
	OutcomeFailed = "failed"
)

// Reasons a unit is finalized failed.
const (
	ReasonTestFailure            = "test_failure"
	ReasonRetryBudgetExhausted   = "retry_budget_exhausted"
	ReasonReclaimBudgetExhausted = "reclaim_budget_exhausted"
)

// Phases of a worker_error: where in the worker's life the error happened.
const (
	PhaseBoot      = "boot"
	PhaseInit      = "init"
	PhaseReserve   = "reserve"
	PhaseExecution = "execution"
	PhaseRedis     = "redis"
	PhaseFormatter = "formatter"
)

// Operations a stale_rejected event can name: the fenced call that was refused.
const (
	OperationFinalize  = "finalize"
	OperationRequeue   = "requeue"
	OperationHeartbeat = "heartbeat"
	OperationAbandoned = "abandoned"
)

// Errors returned by this package, always wrapped with the detail (event type,
// unit, offending value); check them with errors.Is.
var (
	// ErrInvalidJSON: JSON handed in by the caller (an errors payload or a
	// prebuilt event) does not parse. Nothing is produced.
	ErrInvalidJSON = errors.New("events: invalid JSON")
	// ErrNotObject: a prebuilt event parses but is not a JSON object, so at_ms
	// cannot be stamped onto it.
	ErrNotObject = errors.New("events: not a JSON object")
	// ErrInvalidEvent: a field value the log must not hold (a negative count,
	// an unknown phase, a non-finite duration, a missing unit id, ...).
	ErrInvalidEvent = errors.New("events: invalid event")
	// ErrMalformedEvent: bytes read back from the log are not an event.
	ErrMalformedEvent = errors.New("events: malformed event")
)
