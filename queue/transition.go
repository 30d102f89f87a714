package queue

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue/internal/lru"
	"github.com/redis/rueidis"
)

// Modes of Transition, as callers of the transition script name them.
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

// Transition runs one transition exactly as callers of the transition
// script hopper replaces call that script: keys are its six KEYS (units,
// units:priority, attempts, meta,
// unit_state, workers), argv its ARGV (mode, worker_id, ttl_ms, then the
// mode's arguments). The reply is the script's reply array, with a string
// where the script returns a string and an int64 where it returns an integer:
// ["OK" 3 0 1], ["STALE"], ["CORRUPT"], ["NONE"], ["FINALIZED" "u1"],
// ["REQUEUED" 1]. Where the script raises an error, so does Transition; bad
// arguments are refused before anything is sent (errors.Is
// ErrInvalidArgument), which the script, which would write part of its work
// first, does not do.
//
// It needs nothing but a build laid out as that script's publisher leaves
// it, reserved with plain XREADGROUP, and marked guarded in meta, as
// Publish marks its builds: on a build without the mark every mode but the
// prebuilt events is refused with ErrUnguarded, writing nothing, since its
// other callers may be the script, which writes none of the guards hopper
// is fenced on (see meta.go). A fenced mode naming another unit
// than the one its entry carries is refused with ErrInvalidArgument (see
// entryUnitCheck in reservation.go). Calls on the same client, keys and ttl_ms share
// one Build (see transitionBuilds), and with it its batches. It is safe for
// concurrent use; the caller keeps ownership of client.
func Transition(ctx context.Context, client rueidis.Client, keys []string, argv []string) (reply []any, err error) {
	call, err := parseCall(argv)
	if err != nil {
		return nil, err
	}
	k, err := ScriptKeys(keys)
	if err != nil {
		return nil, err
	}
	b, err := transitionBuilds.open(client, k, time.Duration(call.ttlMS)*time.Millisecond)
	if err != nil {
		return nil, err
	}
	defer func() {
		if errors.Is(err, rueidis.ErrClosing) {
			transitionBuilds.forget(b) // its client is closed: let both go
		}
	}()
	return b.transition(ctx, call)
}

// Transition takes the script's KEYS and ARGV on every call, as its callers
// called the script, and keeps nothing between calls of its own. A Build
// opened afresh for each call would get none of what a Build shares among
// its callers: the batches and chains of the transitions that arrive at
// once, and what it learnt (the worker guards it gave a TTL, the units of
// the entries it saw, the server's kind of consumer creation). So the calls
// on one client, keys and TTL share one Build, kept in transitionBuilds.
//
// What a Build learns only chooses what to send; every decision stands on
// what its own transaction reads and watches. A Build kept across calls is
// therefore as correct as a fresh one, only cheaper.
//
// The cache holds at most maxCachedBuilds Builds and forgets one idle for
// cachedBuildIdle, so that a process driving many builds in turn holds
// only the recent ones; the clients of the Builds it holds stay reachable
// until then. A Build forgotten while a call still uses it stays whole for
// that call: only the next call opens a new one.

// maxCachedBuilds bounds the Builds Transition keeps.
const maxCachedBuilds = 256

// cachedBuildIdle is how long Transition keeps a Build no call used.
const cachedBuildIdle = 10 * time.Minute

// transitionBuilds is the Builds Transition shares among its calls.
var transitionBuilds = newBuildCache(maxCachedBuilds, cachedBuildIdle, time.Now)

// buildKey is what makes two Transition calls the same Build: everything a
// Build is opened with. Transition passes no option but the TTL.
type buildKey struct {
	client rueidis.Client
	keys   Keys
	ttl    time.Duration
}

// buildCache is the Builds of Transition by buildKey (see package lru).
type buildCache struct{ builds *lru.Cache[buildKey, *Build] }

func newBuildCache(max int, idle time.Duration, now func() time.Time) buildCache {
	return buildCache{lru.New[buildKey, *Build](max, idle, now)}
}

// open returns the Build of (client, keys, ttl), opening it as Transition
// runs it the first time: guarded builds only (see meta.go), set once,
// before any call shares it. A client whose type cannot be a map key (no
// rueidis client is such) gets a fresh Build on every call; bad arguments
// are never kept.
func (c buildCache) open(client rueidis.Client, keys Keys, ttl time.Duration) (*Build, error) {
	open := func() (*Build, error) { return openScript(client, keys, Options{TTL: ttl}) }
	if client == nil || !reflect.TypeOf(client).Comparable() {
		return open()
	}
	return c.builds.Get(buildKey{client: client, keys: keys, ttl: ttl}, open)
}

// forget drops b, if it is still the Build kept for its key: the next call
// opens a new one. Transition forgets a Build whose client is closed.
func (c buildCache) forget(b *Build) {
	if reflect.TypeOf(b.client).Comparable() {
		c.builds.Forget(buildKey{client: b.client, keys: b.schema.keys, ttl: b.opts.TTL}, b)
	}
}

// OpenScript opens the build whose keys are the script's six KEYS, as
// Transition opens it, but with options of the caller's (an engine, a
// meter provider): its Transition refuses builds without the guarded
// mark, as Transition does.
func OpenScript(client rueidis.Client, keys []string, opts Options) (*Build, error) {
	k, err := ScriptKeys(keys)
	if err != nil {
		return nil, err
	}
	return openScript(client, k, opts)
}

// openScript opens a Build that refuses builds without the guarded mark,
// set once, before any call shares it.
func openScript(client rueidis.Client, k Keys, opts Options) (*Build, error) {
	b, err := OpenKeys(client, k, opts)
	if err != nil {
		return nil, err
	}
	b.schema.guardedOnly = true
	return b, nil
}

// Transition is the package's Transition on b, a Build from OpenScript:
// the same ARGV and replies. Its ttl_ms must be b's TTL.
func (b *Build) Transition(ctx context.Context, argv []string) ([]any, error) {
	call, err := parseCall(argv)
	if err != nil {
		return nil, err
	}
	if !b.schema.guardedOnly {
		return nil, errInvalid("Transition on a Build not opened by OpenScript")
	}
	if call.ttlMS != b.schema.ttlMS {
		return nil, errInvalid("ttl_ms %d is not the Build's TTL of %d ms", call.ttlMS, b.schema.ttlMS)
	}
	return b.transition(ctx, call)
}

// transition runs call on b and gives the script's reply.
func (b *Build) transition(ctx context.Context, call call) ([]any, error) {
	r := call.reservation
	switch call.mode {
	case ModeWorkerError, ModeStaleRejected:
		return status(b.AppendPrebuilt(ctx, r.WorkerID, call.payload))
	case ModeLiveness:
		return status(b.Liveness(ctx, r.WorkerID, call.current))
	case ModeReclaim:
		rc, err := b.core.reclaimOn(ctx, r.WorkerID, call.timeoutMS, call.maxReclaims, nil)
		if err != nil {
			return status(err)
		}
		switch rc.Status {
		case ReclaimFinalized:
			return []any{"FINALIZED", rc.UnitID}, nil
		case ReclaimTaken:
			t := rc.Reservation
			if rc.typeMissing { // a Lua array ends at its first nil
				return []any{"OK", string(t.Stream), t.EntryID, t.UnitID}, nil
			}
			return []any{"OK", string(t.Stream), t.EntryID, t.UnitID, t.UnitType, t.DeliveryCount, t.RetryIndex, t.ReclaimCount}, nil
		}
		return []any{"NONE"}, nil
	case ModeDeliveryAccounting:
		d, err := b.AccountDelivery(ctx, r.WorkerID, r.Stream, r.EntryID, r.UnitID)
		if err != nil {
			return status(err)
		}
		return []any{"OK", d.DeliveryCount, d.RetryIndex, d.ReclaimCount}, nil
	case ModeHeartbeat:
		return status(b.Heartbeat(ctx, r))
	case ModeAbandoned:
		return status(b.Abandon(ctx, r, call.result.DurationMS))
	case ModeFinalize:
		return status(b.Finalize(ctx, r, call.result))
	}
	q, err := b.Requeue(ctx, r, call.result, call.budgets)
	if err != nil {
		return status(err)
	}
	if q.Requeued {
		return []any{"REQUEUED", q.RetryIndex}, nil
	}
	return []any{"FINALIZED", q.RetryIndex}, nil
}

// call is one Transition's ARGV, parsed and checked.
type call struct {
	mode        string
	ttlMS       int64
	reservation Reservation // worker, and for the fenced modes the entry
	result      Result      // finalize, requeue; abandoned's elapsed_ms in DurationMS
	budgets     Budgets     // requeue
	timeoutMS   int64       // reclaim
	maxReclaims float64     // reclaim
	payload     []byte      // prebuilt events
	current     string      // liveness
}

// parseCall checks ARGV the way the typed API checks its arguments, before
// anything is sent: the mode, the argument count, every number, stream name,
// id and JSON payload. It never touches Redis.
func parseCall(argv []string) (call, error) {
	var c call
	if len(argv) < 1 {
		return c, errInvalid("argv is empty: want mode, worker_id, ttl_ms, ...")
	}
	c.mode = argv[0]
	if err := checkArgCount(c.mode, len(argv)); err != nil {
		return c, err
	}
	a := args(argv)
	var err error
	if c.ttlMS, err = parseInt("ttl_ms", argv[2], 1); err != nil {
		return c, err
	}
	if c.ttlMS > int64(math.MaxInt64/time.Millisecond) {
		return c, errInvalid("ttl_ms %d is too large", c.ttlMS)
	}
	r := &c.reservation
	r.WorkerID = argv[1]
	if err := checkID("worker id", r.WorkerID); err != nil {
		return c, err
	}
	switch c.mode {
	case ModeWorkerError, ModeStaleRejected:
		c.payload = []byte(argv[3])
		if _, err := events.StampPrebuilt(c.payload, 0); err != nil {
			return c, errInvalid("prebuilt event: %v", err)
		}
		return c, nil
	case ModeLiveness:
		if c.current = a.at(3); c.current != "" {
			err = checkID("unit id", c.current)
		}
		return c, err
	case ModeReclaim:
		if c.timeoutMS, err = parseInt("timeout_ms", argv[3], 0); err != nil {
			return c, err
		}
		c.maxReclaims, err = parseNumber("max_reclaims", argv[4])
		return c, err
	}
	err = c.parseFenced(a)
	return c, err
}

// checkArgCount refuses an unknown mode, or an ARGV of n arguments that
// mode does not take (see argCounts).
func checkArgCount(mode string, n int) error {
	counts, ok := argCounts[mode]
	if !ok {
		return UnknownModeError{mode}
	}
	if n < counts[0] || n > counts[1] {
		if counts[0] == counts[1] {
			return errInvalid("mode %s takes %d arguments, got %d", mode, counts[0], n)
		}
		return errInvalid("mode %s takes %d to %d arguments, got %d", mode, counts[0], counts[1], n)
	}
	return nil
}

// parseFenced reads the fenced modes' arguments: stream, entry_id, then
// their own.
func (c *call) parseFenced(argv args) error {
	r := &c.reservation
	var err error
	if r.Stream, err = ParseStream(argv[3]); err != nil {
		return err
	}
	r.EntryID = argv[4]
	if c.mode == ModeDeliveryAccounting {
		r.UnitID, r.DeliveryCount = argv[5], 1
		return r.check()
	}
	if r.DeliveryCount, err = parseInt("delivery_count", argv[5], 1); err != nil {
		return err
	}
	r.UnitID = argv[6]
	if err := r.check(); err != nil {
		return err
	}
	switch c.mode {
	case ModeHeartbeat:
		return nil
	case ModeAbandoned:
		c.result.DurationMS, err = parseMS("elapsed_ms", argv[7])
		return err
	case ModeFinalize:
		return c.parseFinalize(argv)
	}
	return c.parseRequeue(argv)
}

// parseFinalize reads finalize's outcome, duration_ms, reason and
// errors_json.
func (c *call) parseFinalize(argv args) error {
	c.result = Result{Outcome: argv[7], Reason: argv.at(9), Errors: []byte(argv.at(10))}
	var err error
	if c.result.DurationMS, err = parseMS("duration_ms", argv[8]); err != nil {
		return err
	}
	if c.result.Outcome != events.OutcomePassed && c.result.Outcome != events.OutcomeFailed {
		return errInvalid("outcome %q of unit %q is neither %q nor %q", c.result.Outcome, c.reservation.UnitID, events.OutcomePassed, events.OutcomeFailed)
	}
	return c.result.check()
}

// parseRequeue reads requeue's unit_type, max_requeues,
// requeue_tolerance, duration_ms, failure_summary and errors_json.
func (c *call) parseRequeue(argv args) error {
	c.reservation.UnitType = argv[7]
	if err := checkID("unit type", c.reservation.UnitType); err != nil {
		return err
	}
	maxRequeues, err := parseInt("max_requeues", argv[8], 0)
	if err != nil {
		return err
	}
	if maxRequeues > math.MaxInt32 {
		return errInvalid("max_requeues %d is too large", maxRequeues)
	}
	tolerance, err := parseNumber("requeue_tolerance", argv[9])
	if err != nil {
		return err
	}
	c.budgets = Budgets{MaxRequeues: int(maxRequeues), RequeueTolerance: tolerance}
	if err := c.budgets.check(); err != nil {
		return err
	}
	c.result = Result{FailureSummary: argv.at(11), Errors: []byte(argv.at(12))}
	if c.result.DurationMS, err = parseMS("duration_ms", argv[10]); err != nil {
		return err
	}
	return c.result.check()
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
	v, err := parseNumber(name, s)
	if err == nil && v >= events.MaxMS {
		return 0, errInvalid("%s %q is not below 1e21 milliseconds", name, s)
	}
	return v, err
}
