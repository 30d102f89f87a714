package events

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// StampPrebuilt appends "at_ms":<atMS> as the last key of a prebuilt event
// object (worker_error, stale_rejected): the caller's bytes are kept
// verbatim, never re-encoded, and a comma separates the stamp unless the
// object is empty ({} becomes {"at_ms":5}). Surrounding whitespace is
// trimmed first.
//
// It returns ErrInvalidJSON when event does not parse and ErrNotObject when it
// parses as something other than an object; nothing is produced then. A
// caller's own at_ms key is not removed: the stamp comes last, and decoders
// keep the last of duplicate keys. Safe for concurrent use.
func StampPrebuilt(event []byte, atMS int64) ([]byte, error) {
	obj := trimJSONSpace(event)
	if !json.Valid(obj) {
		return nil, fmt.Errorf("%w: prebuilt event: %v", ErrInvalidJSON, syntaxDetail(obj))
	}
	if obj[0] != '{' {
		return nil, fmt.Errorf("%w: prebuilt event is a JSON %s", ErrNotObject, kindOf(obj))
	}
	body := obj[:len(obj)-1] // a valid object ends with '}'
	out := make([]byte, 0, len(obj)+len(`,"at_ms":}`)+20)
	out = append(out, body...)
	if len(trimJSONSpace(body[1:])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"at_ms":`...)
	out = strconv.AppendInt(out, atMS, 10)
	return append(out, '}'), nil
}

// WorkerError is an error of the worker itself rather than of a unit's tests
// (a failed boot, a corrupt build, a fingerprint mismatch), built by the
// worker and appended with StampPrebuilt.
type WorkerError struct {
	WorkerID string
	Phase    string // one of the Phase constants
	UnitID   string // the unit being worked on; empty (written as null) when none
	Class    string // the error's class or Go type
	// Message is capped at MaxMessageBytes, cut on a UTF-8 boundary with "..."
	// appended.
	Message string
	// Backtrace is capped at MaxBacktraceLines lines; nil is written as [].
	Backtrace []string
}

type wireWorkerError struct {
	Type      string   `json:"type"`
	WorkerID  string   `json:"worker_id"`
	Phase     string   `json:"phase"`
	UnitID    *string  `json:"unit_id"`
	Class     string   `json:"class"`
	Message   string   `json:"message"`
	Backtrace []string `json:"backtrace"`
}

// Encode returns the worker_error object the worker hands to the log, without
// at_ms (StampPrebuilt adds it): type, worker_id, phase, unit_id, class,
// message, backtrace. It refuses an unknown phase and an empty worker id.
func (e WorkerError) Encode() ([]byte, error) {
	if e.WorkerID == "" {
		return nil, fmt.Errorf("%w: worker_error has no worker id", ErrInvalidEvent)
	}
	switch e.Phase {
	case PhaseBoot, PhaseInit, PhaseReserve, PhaseExecution, PhaseRedis, PhaseFormatter:
	default:
		return nil, fmt.Errorf("%w: worker_error phase %q is not one of boot, init, reserve, execution, redis, formatter", ErrInvalidEvent, e.Phase)
	}
	return marshal(wireWorkerError{
		Type:      TypeWorkerError,
		WorkerID:  e.WorkerID,
		Phase:     e.Phase,
		UnitID:    nullIfEmpty(e.UnitID),
		Class:     e.Class,
		Message:   capMessage(e.Message),
		Backtrace: capBacktrace(e.Backtrace),
	})
}

// StaleRejected records a fenced call refused because the worker no longer
// owns the reservation (it was reclaimed). The values are the reservation's,
// as the worker held it; built by the worker and appended with StampPrebuilt.
type StaleRejected struct {
	UnitID        string
	WorkerID      string
	RetryIndex    int64
	ReclaimCount  int64
	Operation     string // one of the Operation constants
	Stream        string
	EntryID       string
	DeliveryCount int64
}

type wireStaleRejected struct {
	Type                string `json:"type"`
	UnitID              string `json:"unit_id"`
	WorkerID            string `json:"worker_id"`
	RetryIndex          int64  `json:"retry_index"`
	ReclaimCount        int64  `json:"reclaim_count"`
	OwnershipGeneration int64  `json:"ownership_generation"`
	Operation           string `json:"operation"`
	Stream              string `json:"stream"`
	EntryID             string `json:"entry_id"`
	DeliveryCount       int64  `json:"delivery_count"`
}

// Encode returns the stale_rejected object the worker hands to the log,
// without at_ms (StampPrebuilt adds it): type, unit_id, worker_id,
// retry_index, reclaim_count, ownership_generation, operation, stream,
// entry_id, delivery_count. It refuses an unknown operation.
func (e StaleRejected) Encode() ([]byte, error) {
	h, err := Head{UnitID: e.UnitID, WorkerID: e.WorkerID, RetryIndex: e.RetryIndex, ReclaimCount: e.ReclaimCount}.wire(TypeStaleRejected)
	if err != nil {
		return nil, err
	}
	switch e.Operation {
	case OperationFinalize, OperationRequeue, OperationHeartbeat, OperationAbandoned:
	default:
		return nil, invalid(TypeStaleRejected, e.UnitID, "operation %q is not one of finalize, requeue, heartbeat, abandoned", e.Operation)
	}
	return marshal(wireStaleRejected{
		Type:                TypeStaleRejected,
		UnitID:              h.UnitID,
		WorkerID:            h.WorkerID,
		RetryIndex:          h.RetryIndex,
		ReclaimCount:        h.ReclaimCount,
		OwnershipGeneration: h.OwnershipGeneration,
		Operation:           e.Operation,
		Stream:              e.Stream,
		EntryID:             e.EntryID,
		DeliveryCount:       e.DeliveryCount,
	})
}
