package queue

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Modes of Transition, as the reference script names them.
const (
	ModeDeliveryAccounting = "delivery_accounting"
	ModeReclaim            = "reclaim"
	ModeHeartbeat          = "heartbeat"
	ModeFinalize           = "finalize"
	ModeRequeue            = "requeue"
	ModeAbandoned          = "abandoned"
	ModeLiveness           = "liveness"
	ModeWorkerError        = "worker_error"
	ModeStaleRejected      = "stale_rejected"
)

// argCounts bounds each mode's ARGV length, mode, worker_id and ttl_ms
// included. Trailing optional arguments (reason, failure summary, errors,
// liveness's current unit) may be left off, as the script's callers may.
var argCounts = map[string][2]int{
	ModeDeliveryAccounting: {6, 6},
	ModeReclaim:            {5, 5},
	ModeHeartbeat:          {7, 7},
	ModeFinalize:           {9, 11},
	ModeRequeue:            {11, 13},
	ModeAbandoned:          {8, 8},
	ModeLiveness:           {3, 4},
	ModeWorkerError:        {4, 4},
	ModeStaleRejected:      {4, 4},
}

// UnknownModeError is Transition's error for a mode the script does not have.
type UnknownModeError struct{ Mode string }

func (e UnknownModeError) Error() string { return "ERR unknown transition mode " + e.Mode }

// Unwrap makes errors.Is(err, ErrInvalidArgument) hold.
func (e UnknownModeError) Unwrap() error { return ErrInvalidArgument }

// Transition runs one transition exactly as the reference script's callers
// call it: keys are its six KEYS (units, units:priority, attempts, meta,
// unit_state, workers), argv its ARGV (mode, worker_id, ttl_ms, then the
// mode's arguments). The reply is the script's reply array, with a string
// where the script returns a string and an int64 where it returns an integer:
// ["OK" 3 0 1], ["STALE"], ["CORRUPT"], ["NONE"], ["FINALIZED" "u1"],
// ["REQUEUED" 1]. Where the script raises an error, so does Transition; bad
// arguments are refused before anything is sent (errors.Is
// ErrInvalidArgument), which the script, which would write part of its work
// first, does not do.
//
// It needs nothing but a build laid out as the reference's publisher leaves
// it, reserved with plain XREADGROUP. It is safe for concurrent use; the
// caller keeps ownership of client.
func Transition(ctx context.Context, client rueidis.Client, keys []string, argv []string) ([]any, error) {
	if len(argv) < 1 {
		return nil, errInvalid("argv is empty: want mode, worker_id, ttl_ms, ...")
	}
	mode := argv[0]
	counts, ok := argCounts[mode]
	if !ok {
		return nil, UnknownModeError{mode}
	}
	if len(argv) < counts[0] || len(argv) > counts[1] {
		if counts[0] == counts[1] {
			return nil, errInvalid("mode %s takes %d arguments, got %d", mode, counts[0], len(argv))
		}
		return nil, errInvalid("mode %s takes %d to %d arguments, got %d", mode, counts[0], counts[1], len(argv))
	}
	k, err := ScriptKeys(keys)
	if err != nil {
		return nil, err
	}
	ttl, err := parseInt("ttl_ms", argv[2], 1)
	if err != nil {
		return nil, err
	}
	b, err := OpenKeys(client, k, Options{TTL: time.Duration(ttl) * time.Millisecond})
	if err != nil {
		return nil, err
	}
	a := args(argv)
	worker := argv[1]
	switch mode {
	case ModeWorkerError, ModeStaleRejected:
		return status(b.AppendPrebuilt(ctx, worker, []byte(argv[3])))
	case ModeLiveness:
		return status(b.Liveness(ctx, worker, a.at(3)))
	case ModeReclaim:
		timeout, err := parseInt("timeout_ms", argv[3], 0)
		if err != nil {
			return nil, err
		}
		maxReclaims, err := parseNumber("max_reclaims", argv[4])
		if err != nil {
			return nil, err
		}
		if err := checkID("worker id", worker); err != nil {
			return nil, err
		}
		rc, err := b.reclaim(ctx, worker, timeout, maxReclaims)
		if err != nil {
			return status(err)
		}
		switch rc.Status {
		case ReclaimFinalized:
			return []any{"FINALIZED", rc.UnitID}, nil
		case ReclaimTaken:
			r := rc.Reservation
			if rc.typeMissing { // a Lua array ends at its first nil
				return []any{"OK", string(r.Stream), r.EntryID, r.UnitID}, nil
			}
			return []any{"OK", string(r.Stream), r.EntryID, r.UnitID, r.UnitType, r.DeliveryCount, r.RetryIndex, r.ReclaimCount}, nil
		}
		return []any{"NONE"}, nil
	}

	// The fenced modes: stream, entry_id, then their own arguments.
	stream, err := ParseStream(argv[3])
	if err != nil {
		return nil, err
	}
	r := Reservation{WorkerID: worker, Stream: stream, EntryID: argv[4]}
	if mode == ModeDeliveryAccounting {
		d, err := b.AccountDelivery(ctx, worker, stream, argv[4], argv[5])
		if err != nil {
			return status(err)
		}
		return []any{"OK", d.DeliveryCount, d.RetryIndex, d.ReclaimCount}, nil
	}
	if r.DeliveryCount, err = parseInt("delivery_count", argv[5], 1); err != nil {
		return nil, err
	}
	r.UnitID = argv[6]
	switch mode {
	case ModeHeartbeat:
		return status(b.Heartbeat(ctx, r))
	case ModeAbandoned:
		elapsed, err := parseMS("elapsed_ms", argv[7])
		if err != nil {
			return nil, err
		}
		return status(b.Abandon(ctx, r, elapsed))
	case ModeFinalize:
		res := Result{Outcome: argv[7], Reason: a.at(9), Errors: []byte(a.at(10))}
		if res.DurationMS, err = parseMS("duration_ms", argv[8]); err != nil {
			return nil, err
		}
		return status(b.Finalize(ctx, r, res))
	}
	// requeue: unit_type, max_requeues, requeue_tolerance, duration_ms,
	// failure_summary, errors_json.
	r.UnitType = argv[7]
	maxRequeues, err := parseInt("max_requeues", argv[8], 0)
	if err != nil {
		return nil, err
	}
	tolerance, err := parseNumber("requeue_tolerance", argv[9])
	if err != nil {
		return nil, err
	}
	res := Result{FailureSummary: a.at(11), Errors: []byte(a.at(12))}
	if res.DurationMS, err = parseMS("duration_ms", argv[10]); err != nil {
		return nil, err
	}
	if maxRequeues > math.MaxInt32 {
		return nil, errInvalid("max_requeues %d is too large", maxRequeues)
	}
	q, err := b.Requeue(ctx, r, res, Budgets{MaxRequeues: int(maxRequeues), RequeueTolerance: tolerance})
	if err != nil {
		return status(err)
	}
	if q.Requeued {
		return []any{"REQUEUED", q.RetryIndex}, nil
	}
	return []any{"FINALIZED", q.RetryIndex}, nil
}

// status turns a transition's error into the script's status reply: STALE
// and CORRUPT are replies, not errors, so callers can tell them from Redis
// errors.
func status(err error) ([]any, error) {
	switch {
	case err == nil:
		return []any{"OK"}, nil
	case errors.Is(err, ErrStale):
		return []any{"STALE"}, nil
	case errors.Is(err, ErrCorrupt):
		return []any{"CORRUPT"}, nil
	}
	return nil, err
}

type args []string

// at returns argument i, or "" when the caller left it off.
func (a args) at(i int) string {
	if i < len(a) {
		return a[i]
	}
	return ""
}

func parseInt(name, s string, floor int64) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, errInvalid("%s %q is not an integer", name, s)
	}
	if v < floor {
		return 0, errInvalid("%s %d is below %d", name, v, floor)
	}
	return v, nil
}

func parseNumber(name, s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, errInvalid("%s %q is not a non-negative number", name, s)
	}
	return v, nil
}

// parseMS reads a duration in milliseconds; empty means 0, as in the script.
func parseMS(name, s string) (float64, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	return parseNumber(name, s)
}
