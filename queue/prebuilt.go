package queue

import (
	"context"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue/internal/engine"
	"github.com/redis/rueidis"
)

// modePrebuilt labels the metrics of AppendPrebuilt, which serves both
// worker_error and stale_rejected.
const modePrebuilt = "prebuilt"

// AppendPrebuilt appends an event the worker built itself (worker_error,
// stale_rejected; see the events package): the server's time is stamped on
// as its last key, the caller's bytes are kept as they are, and the build's
// TTLs are renewed. It is not fenced and does not need meta: a worker must be
// able to report that the build's state is gone. worker names the worker
// whose guard orders this append with its other transitions. Right after
// a settlement of worker refused STALE, it commits in one round trip on
// that settlement's WATCH (package engine, kept_watch.go).
func (b *Build) AppendPrebuilt(ctx context.Context, worker string, event []byte) (err error) {
	defer func(start time.Time) { b.meter.observe(ctx, modePrebuilt, statusOf(err, StatusOK), start) }(time.Now())
	if err := checkID("worker id", worker); err != nil {
		return err
	}
	if _, err := events.StampPrebuilt(event, 0); err != nil {
		return errInvalid("prebuilt event: %v", err)
	}
	return b.core.commitWorker(ctx, engine.WorkerPlan{
		Mode: modePrebuilt, Worker: worker,
		Decide: func(c rueidis.DedicatedClient, _ []rueidis.RedisResult, now int64) (rueidis.Commands, error) {
			stamped, err := events.StampPrebuilt(event, now)
			if err != nil {
				return nil, err
			}
			return rueidis.Commands{b.schema.appendEvent(c, stamped)}, nil
		},
	})
}
