package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// Liveness records that an idle worker is alive: its record's last_seen
// becomes the server's time and its current unit becomes currentUnit (empty:
// none), and the build's TTLs are renewed, so a build whose workers all wait
// for lost work to come back does not expire. ErrCorrupt: meta is missing
// or holds no state.
func (b *Build) Liveness(ctx context.Context, worker, currentUnit string) (err error) {
	defer func(start time.Time) { b.meter.observe(ctx, ModeLiveness, statusOf(err, StatusOK), start) }(time.Now())
	if err := checkID("worker id", worker); err != nil {
		return err
	}
	if currentUnit != "" {
		if err := checkID("unit id", currentUnit); err != nil {
			return err
		}
	}
	wguard := b.keys.workerGuard(worker)
	return b.commit(ctx, ModeLiveness, wguard, func(ctx context.Context, c rueidis.DedicatedClient, t *tx) (rueidis.Commands, error) {
		res := c.DoMulti(ctx,
			c.B().Watch().Key(wguard).Build(),
			b.metaRead(c),
			c.B().Hget().Key(b.keys.Workers).Field(worker).Build(),
			c.B().Time().Build(),
		)
		if err := res[0].Error(); err != nil {
			return nil, err
		}
		if found, err := b.metaFound(res[1]); err != nil {
			return nil, err
		} else if !found {
			return nil, fmt.Errorf("%w: meta is missing or holds no state (worker %q)", ErrCorrupt, worker)
		}
		raw, found, err := optionalString(res[2])
		if err != nil {
			return nil, err
		}
		rec, err := parseWorkerRecord(raw, found)
		if err != nil {
			return nil, err
		}
		now, err := b.anchoredNow(ctx, c, res[3])
		if err != nil {
			return nil, err
		}
		t.Now = now
		return b.renew(c, rueidis.Commands{b.touchWorker(c, worker, rec, now, setCurrent(currentUnit), 0)}), nil
	})
}
