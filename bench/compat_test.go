package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// `make bench-compat` runs the harness with HOPPER_BENCH_API=transition: our
// side then calls queue.Transition once per transition, with the script's
// KEYS and ARGV, exactly where the script's side calls EVALSHA: the path a
// caller of the script migrates through.

// The APIs our side can drive (HOPPER_BENCH_API).
const (
	apiTyped      = "typed"
	apiTransition = "transition"
)

func loadAPI() (string, error) {
	switch v := os.Getenv("HOPPER_BENCH_API"); v {
	case "", apiTyped:
		return apiTyped, nil
	case apiTransition:
		return v, nil
	default:
		return "", fmt.Errorf("HOPPER_BENCH_API=%q: want %s or %s", v, apiTyped, apiTransition)
	}
}

// argvSide runs the workload's transitions as the script's callers do: one
// call with the six KEYS and the mode's ARGV, whose reply is a status and
// the mode's integers. The script's side and Transition's differ only in
// that call.
type argvSide struct {
	// run sends argv and returns the reply's status and its integers.
	run func(ctx context.Context, argv []string) (status string, ints []int64, err error)
}

func (s argvSide) call(ctx context.Context, want string, argv ...string) ([]int64, error) {
	st, ints, err := s.run(ctx, argv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", argv[0], err)
	}
	if st != want {
		return nil, fmt.Errorf("%s: status %q, want %q: %w", argv[0], st, want, errStatus)
	}
	return ints, nil
}

func (s argvSide) account(ctx context.Context, worker string, x entry) (queue.Reservation, error) {
	ints, err := s.call(ctx, "OK", queue.ModeDeliveryAccounting, worker, ttlArg, string(x.stream), x.id, x.unit)
	if err != nil {
		return queue.Reservation{}, err
	}
	if len(ints) != 3 {
		return queue.Reservation{}, fmt.Errorf("delivery_accounting reply of %d integers: %w", len(ints), errStatus)
	}
	return queue.Reservation{WorkerID: worker, Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ,
		DeliveryCount: ints[0], RetryIndex: ints[1], ReclaimCount: ints[2]}, nil
}

func (s argvSide) heartbeat(ctx context.Context, r queue.Reservation) error {
	_, err := s.call(ctx, "OK", queue.ModeHeartbeat, r.WorkerID, ttlArg, string(r.Stream), r.EntryID,
		strconv.FormatInt(r.DeliveryCount, 10), r.UnitID)
	return err
}

func (s argvSide) finalize(ctx context.Context, r queue.Reservation) error {
	_, err := s.call(ctx, "OK", queue.ModeFinalize, r.WorkerID, ttlArg, string(r.Stream), r.EntryID,
		strconv.FormatInt(r.DeliveryCount, 10), r.UnitID, events.OutcomePassed, durationArg, "", "")
	return err
}

func (s argvSide) requeue(ctx context.Context, r queue.Reservation) error {
	_, err := s.call(ctx, "REQUEUED", queue.ModeRequeue, r.WorkerID, ttlArg, string(r.Stream), r.EntryID,
		strconv.FormatInt(r.DeliveryCount, 10), r.UnitID, r.UnitType, "1", "1", durationArg, failureSummary, string(errorsPayload))
	return err
}

// transitionSide is our side through queue.Transition on client c.
func transitionSide(c rueidis.Client, keys []string) argvSide {
	return argvSide{run: func(ctx context.Context, argv []string) (string, []int64, error) {
		reply, err := queue.Transition(ctx, c, keys, argv)
		if err != nil {
			return "", nil, err
		}
		return splitReply(len(reply), func(i int) (string, int64, bool) {
			s, isString := reply[i].(string)
			n, _ := reply[i].(int64)
			return s, n, isString
		})
	}}
}

// scriptSide is the script's side: EVALSHA auto-pipelined on client c.
func scriptSide(c rueidis.Client, sha string, keys []string) argvSide {
	return argvSide{run: func(ctx context.Context, argv []string) (string, []int64, error) {
		msgs, err := c.Do(ctx, c.B().Evalsha().Sha1(sha).Numkeys(6).Key(keys...).Arg(argv...).Build()).ToArray()
		if err != nil {
			return "", nil, fmt.Errorf("EVALSHA: %w", err)
		}
		return splitReply(len(msgs), func(i int) (string, int64, bool) {
			if msgs[i].IsInt64() {
				n, _ := msgs[i].AsInt64()
				return "", n, false
			}
			s, _ := msgs[i].ToString()
			return s, 0, true
		})
	}}
}

// splitReply reads a reply of n elements, a status first, then integers.
func splitReply(n int, at func(i int) (s string, v int64, isString bool)) (string, []int64, error) {
	if n == 0 {
		return "", nil, fmt.Errorf("empty reply: %w", errStatus)
	}
	st, _, ok := at(0)
	if !ok {
		return "", nil, fmt.Errorf("reply's status is not a string: %w", errStatus)
	}
	ints := make([]int64, 0, n-1)
	for i := 1; i < n; i++ {
		_, v, isString := at(i)
		if isString {
			return "", nil, fmt.Errorf("reply element %d is not an integer: %w", i+1, errStatus)
		}
		ints = append(ints, v)
	}
	return st, ints, nil
}
