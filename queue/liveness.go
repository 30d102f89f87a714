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
// or holds no state. After a reservation that gave nothing, it commits in
// one round trip on the reads that reservation's wait carried
// (kept_watch.go).
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
	from := b.watches.take(worker, ModeLiveness)
	return b.commitLinked(ctx, ModeLiveness, b.keys.workerGuard(worker), link{From: from}, func(ctx context.Context, c rueidis.DedicatedClient, t *tx) (rueidis.Commands, error) {
		res, kept := t.First, t.First != nil
		var tr trip
		if !kept {
			res, tr = b.clock.timeTrip(ctx, c, append(b.livenessReads(c, worker), c.B().Time().Build())...)
		}
		if err := res[0].Error(); err != nil {
			return nil, err
		}
		rec, err := b.livenessRecord(worker, res[1], res[2])
		if err != nil && kept {
			return nil, errRetry // never refuse on reads made before the call
		}
		if err != nil {
			return nil, err
		}
		if kept {
			t.Now, err = b.serverNow(ctx, c)
		} else {
			t.Now, err = b.anchoredNow(ctx, c, res[3], tr)
		}
		if err != nil {
			return nil, err
		}
		return b.renew(c, rueidis.Commands{b.touchWorker(c, worker, rec, t.Now, setCurrent(currentUnit), 0)}), nil
	})
}

// livenessReads are what Liveness WATCHes and reads before it decides:
// the worker guard, then meta's state and the worker's record.
func (b *Build) livenessReads(c rueidis.DedicatedClient, worker string) rueidis.Commands {
	return rueidis.Commands{
		c.B().Watch().Key(b.keys.workerGuard(worker)).Build(),
		b.metaRead(c),
		c.B().Hget().Key(b.keys.Workers).Field(worker).Build(),
	}
}

// livenessRecord reads the replies of livenessReads past the WATCH: the
// worker's record, or ErrCorrupt when meta holds no state.
func (b *Build) livenessRecord(worker string, meta, record rueidis.RedisResult) (workerRecord, error) {
	if found, err := b.metaFound(meta); err != nil {
		return workerRecord{}, err
	} else if !found {
		return workerRecord{}, fmt.Errorf("%w: meta is missing or holds no state (worker %q)", ErrCorrupt, worker)
	}
	raw, found, err := optionalString(record)
	if err != nil {
		return workerRecord{}, err
	}
	return parseWorkerRecord(raw, found)
}
