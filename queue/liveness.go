package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/engine"
	"github.com/redis/rueidis"
)

// Liveness records that an idle worker is alive: its record's last_seen
// becomes the server's time and its current unit becomes currentUnit (empty:
// none), and the build's TTLs are renewed, so a build whose workers all wait
// for lost work to come back does not expire. ErrCorrupt: meta is missing
// or holds no state. After a reservation that gave nothing, it commits in
// one round trip on the reads that reservation's wait carried
// (package engine, kept_watch.go).
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
	return b.core.commitWorker(ctx, engine.WorkerPlan{
		Mode: ModeLiveness, Worker: worker,
		Reads: func(c rueidis.DedicatedClient) rueidis.Commands { return b.schema.livenessReads(c, worker) },
		Decide: func(c rueidis.DedicatedClient, res []rueidis.RedisResult, now int64) (rueidis.Commands, error) {
			rec, err := b.schema.livenessRecord(worker, res[0], res[1])
			if err != nil {
				return nil, err
			}
			return rueidis.Commands{b.schema.touchWorker(c, worker, rec, now, setCurrent(currentUnit), 0)}, nil
		},
	})
}

// livenessReads are what Liveness reads before it decides, behind the
// WATCH of the worker guard: meta's state and the worker's record.
func (sc *schema) livenessReads(c rueidis.DedicatedClient, worker string) rueidis.Commands {
	return rueidis.Commands{sc.metaRead(c), c.B().Hget().Key(sc.keys.Workers).Field(worker).Build()}
}

// livenessRecord reads the replies of livenessReads: the
// worker's record, or ErrCorrupt when meta holds no state.
func (sc *schema) livenessRecord(worker string, meta, record rueidis.RedisResult) (workerRecord, error) {
	if found, err := sc.metaFound(meta); err != nil {
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
