package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// worker is one Run: one worker of one build.
type worker struct {
	cfg      Config
	build    *queue.Build
	fn       BatchFunc
	manifest queue.Manifest // as published
	progress queue.Progress // as last read: it sizes the next batch
	logMu    sync.Mutex
}

// Run joins build cfg.BuildID as worker cfg.WorkerID (publishing suite if
// no one has), then runs the build's units with fn, one at a time, until
// every unit of the build is finalized; then it returns nil, whatever the
// tests did. Several Runs with distinct worker ids may share a process and
// a client. Run does not close client.
//
// Errors (see ExitCode): cfg out of range (ErrInvalidConfig); the build
// cannot be joined (queue.InitFailedError, queue.ErrBuildBurnt,
// queue.ErrNeverInitialized, queue.FingerprintMismatchError); the build's
// state is missing or corrupt (queue.ErrCorrupt, recorded as a worker_error
// with phase redis); Redis unreachable (nothing recorded); a unit ran past
// MaxUnitDuration+Timeout (ErrAborted); the heartbeat failed for longer than
// Timeout (ErrHeartbeatLost).
//
// When ctx ends, Run stops taking units and returns ctx.Err(). A unit
// running then sees its context cancelled. If its Func still returns
// Passed, the result is settled; any other result is discarded and the
// unit left as it is: pending under this worker's name, no longer
// heartbeated, so another worker reclaims it once it has been silent for
// Timeout (spending one of its reclaims) and runs it again. The workers
// hash keeps naming it as this worker's current unit until then.
func Run(ctx context.Context, client rueidis.Client, suite Suite, cfg Config, fn Func) error {
	if fn == nil {
		return fmt.Errorf("%w: nil Func", ErrInvalidConfig)
	}
	cfg.Batch = 1 // a Func runs one unit: batches are RunBatches'
	return run(ctx, client, suite, cfg, perUnit(fn))
}

// run is Run and RunBatches.
func run(ctx context.Context, client rueidis.Client, suite Suite, cfg Config, fn BatchFunc) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	// A worker rides out an unreachable Redis for up to Timeout, then exits:
	// learning whether a commit whose reply was lost was applied
	// (docs/design.md#lost-replies) is part of that ride, and must not keep it
	// any longer.
	build, err := queue.Open(client, cfg.BuildID, queue.Options{TTL: cfg.TTL, ResolveWait: cfg.Timeout})
	if err != nil {
		if errors.Is(err, queue.ErrInvalidArgument) {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		return err
	}
	if err := queue.CheckWorkerID(cfg.WorkerID); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	w := &worker{cfg: cfg, build: build, fn: fn}
	joined, err := build.Join(ctx, cfg.WorkerID, suite.manifest(cfg), cfg.joinOptions())
	if err != nil {
		return fmt.Errorf("worker %s: %w", cfg.WorkerID, err)
	}
	w.manifest = joined.Manifest
	w.progress = queue.Progress{Total: int64(joined.Manifest.TotalUnits())}
	verb := "joined"
	if joined.Published {
		verb = "initialized"
	}
	w.logf("%s build %s (%d units)", verb, cfg.BuildID, joined.Manifest.TotalUnits())
	if err := w.enterRound(ctx); err != nil {
		return fmt.Errorf("worker %s: %w", cfg.WorkerID, err)
	}
	return w.loop(ctx)
}

// loop takes and runs units until the build is complete.
func (w *worker) loop(ctx context.Context) error {
	var down time.Time // since when Redis has been unreachable
	// outage tells an error to ride out: Redis unreachable, or a cluster
	// failing over, for less than Timeout so far. It waits a little first.
	outage := func(err error) bool {
		if !transient(ctx, err) {
			return false
		}
		if down.IsZero() {
			down = time.Now()
		}
		if time.Since(down) > w.cfg.Timeout {
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		return true
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := w.nextBatch(ctx)
		rs, err := w.build.ReserveBatch(ctx, w.cfg.WorkerID, n, w.reserveOptions(ctx, n))
		if err != nil {
			// Units accounted for before the error are left pending, for
			// a reclaim after the timeout.
			if outage(err) {
				continue
			}
			return w.fail(ctx, events.PhaseReserve, "", err)
		}
		if len(rs) > 0 {
			if err := w.work(ctx, rs); err != nil {
				return err
			}
			// Redis answered the reservation and the settlement: an outage
			// met next, after a unit that may have run longer than Timeout,
			// is ridden out for Timeout from its own start.
			down = time.Time{}
		} else if err := w.build.Liveness(ctx, w.cfg.WorkerID, ""); err != nil {
			if outage(err) {
				continue
			}
			return w.fail(ctx, events.PhaseRedis, "", err)
		}
		p, err := w.build.Progress(ctx)
		if err != nil {
			if outage(err) {
				continue
			}
			return w.fail(ctx, events.PhaseRedis, "", err)
		}
		w.progress = p
		down = time.Time{}
		if p.Complete() {
			return nil
		}
	}
}

// reserveOptions are the worker's options for a reservation of n units.
// It reads ahead (queue.ReserveOptions.ReadAhead: its settlement carries
// the next reservation's reads) unless it is stopping or these may be the
// build's last units: either way it may not reserve again, and entries
// read ahead would wait for a reclaim after Timeout. Batches of more than
// one do not read ahead: the next may be smaller, and what the read-ahead
// delivered beyond it would wait, heartbeated by nothing, while the batch
// runs (docs/design.md#read-ahead).
func (w *worker) reserveOptions(ctx context.Context, n int) queue.ReserveOptions {
	opts := w.cfg.reserveOptions()
	opts.ReadAhead = w.cfg.Batch <= 1 && ctx.Err() == nil && w.progress.Total-w.progress.Finalized > int64(n)
	return opts
}

// transient tells the errors of a Redis that is away for a while (see
// queue.Transient), while the worker itself goes on.
func transient(ctx context.Context, err error) bool {
	return ctx.Err() == nil && queue.Transient(err)
}

// fail ends the worker with err. A corrupt build is recorded (phase redis),
// as is any error Redis itself replied during phase; an unreachable Redis,
// or the worker's own stop, is not.
func (w *worker) fail(ctx context.Context, phase, unit string, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return ctx.Err() // the worker was stopped: not a failure to record
	}
	var redisErr *rueidis.RedisError
	switch {
	case errors.Is(err, queue.ErrCorrupt):
		w.recordError(ctx, events.PhaseRedis, unit, err, nil)
	case errors.As(err, &redisErr), errors.Is(err, queue.ErrContention):
		w.recordError(ctx, phase, unit, err, nil)
	}
	return fmt.Errorf("worker %s: %w", w.cfg.WorkerID, err)
}
