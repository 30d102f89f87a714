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
// whose guard orders this append with its other transitions.
func (b *Build) AppendPrebuilt(ctx context.Context, worker string, event []byte) (err error) {
	defer func(start time.Time) { b.meter.observe(ctx, modePrebuilt, statusOf(err, StatusOK), start) }(time.Now())
	if err := checkID("worker id", worker); err != nil {
		return err
	}
	if _, err := events.StampPrebuilt(event, 0); err != nil {
		return errInvalid("prebuilt event: %v", err)
	}
	wguard := b.keys.workerGuard(worker)
	return b.commit(ctx, modePrebuilt, wguard, func(ctx context.Context, c rueidis.DedicatedClient, t *tx) (rueidis.Commands, error) {
		res := c.DoMulti(ctx, c.B().Watch().Key(wguard).Build(), c.B().Time().Build())
		if err := res[0].Error(); err != nil {
			return nil, err
		}
		now, err := b.anchoredNow(ctx, c, res[1])
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
