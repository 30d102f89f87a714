package worker

import (
	"context"
	"fmt"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// BatchFunc runs one attempt at each unit of a batch, in one go (one
// command for all of them), and returns one Result per reservation, in
// order. Each Result is settled on its own: a unit of the batch may pass
// while another fails, and a unit reclaimed while the batch ran is refused
// as stale while the others count. It must return when ctx ends.
type BatchFunc func(ctx context.Context, rs []queue.Reservation) []Result

// RunBatches is Run with a BatchFunc: the worker reserves up to
// Config.Batch units in one read (fewer near the end, see batchSize) and
// runs fn once for them. With Batch 1 it is Run.
func RunBatches(ctx context.Context, client rueidis.Client, suite Suite, cfg Config, fn BatchFunc) error {
	if fn == nil {
		return fmt.Errorf("%w: nil BatchFunc", ErrInvalidConfig)
	}
	return run(ctx, client, suite, cfg, fn)
}

// perUnit is a Func as a BatchFunc (Run's batches are of one unit).
func perUnit(fn Func) BatchFunc {
	return func(ctx context.Context, rs []queue.Reservation) []Result {
		out := make([]Result, len(rs))
		for i, r := range rs {
			out[i] = fn(ctx, r)
		}
		return out
	}
}

// batchSize is how many units to reserve next: at most limit, and at most
// the units not yet finalized shared among the build's worker slots (the
// larger of slots, this worker's own count, and the workers the build has
// seen), so that the last batches shrink and no slot is left holding a
// long batch while the others sit idle. Never less than one.
func batchSize(limit int, p queue.Progress, slots int, workers int64) int {
	if limit <= 1 {
		return 1
	}
	share := max(int64(slots), workers, 1)
	n := (p.Total - p.Finalized) / share
	return int(max(min(n, int64(limit)), 1))
}

// nextBatch is the size of the next batch. The count of the build's
// workers is read only for batches of more than one unit; when it cannot
// be read, the worker's own Slots stand for it.
func (w *worker) nextBatch(ctx context.Context) int {
	if w.cfg.Batch <= 1 {
		return 1
	}
	workers, err := w.build.WorkerCount(ctx)
	if err != nil {
		workers = 0
	}
	return batchSize(w.cfg.Batch, w.progress, w.cfg.Slots, workers)
}
