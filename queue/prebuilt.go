package queue

import (
	"context"
	"time"

	"github.com/hopper-queue/hopper/events"
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
// that settlement's WATCH (kept_watch.go).
func (b *Build) AppendPrebuilt(ctx context.Context, worker string, event []byte) (err error) {
	defer func(start time.Time) { b.meter.observe(ctx, modePrebuilt, statusOf(err, StatusOK), start) }(time.Now())
	if err := checkID("worker id", worker); err != nil {
		return err
	}
	if _, err := events.StampPrebuilt(event, 0); err != nil {
		return errInvalid("prebuilt event: %v", err)
	}
	from := b.watches.take(worker, modePrebuilt)
	return b.commitLinked(ctx, modePrebuilt, b.keys.workerGuard(worker), link{From: from}, func(ctx context.Context, c rueidis.DedicatedClient, t *tx) (rueidis.Commands, error) {
		now, err := b.prebuiltNow(ctx, c, worker, t.First != nil)
		if err != nil {
			return nil, err
		}
		t.Now = now
		stamped, err := events.StampPrebuilt(event, now)
		if err != nil {
			return nil, err
		}
		return b.renew(c, rueidis.Commands{b.appendEvent(c, stamped)}), nil
	})
}

// prebuiltNow WATCHes worker's guard on c, unless c kept it watched
// (kept_watch.go), and tells the server's time.
func (b *Build) prebuiltNow(ctx context.Context, c rueidis.DedicatedClient, worker string, kept bool) (int64, error) {
	if kept {
		return b.serverNow(ctx, c)
	}
	res, tr := b.clock.timeTrip(ctx, c, c.B().Watch().Key(b.keys.workerGuard(worker)).Build(), c.B().Time().Build())
	if err := res[0].Error(); err != nil {
		return 0, err
	}
	return b.anchoredNow(ctx, c, res[1], tr)
}
