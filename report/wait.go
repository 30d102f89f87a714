package report

import (
	"context"
	"fmt"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// Run waits for build buildID and judges it:
//
//  1. it polls every PollInterval until meta or the tombstone shows, giving
//     up after InitTimeout (VerdictMissing);
//  2. with meta, unless publishing failed, it polls until finalized_count
//     reaches total_units, giving up after Timeout (counted from the start
//     of Run) or as soon as no worker has shown a sign of life for more
//     than InactiveTimeout (VerdictIncomplete);
//  3. it reads the whole attempt log and hands everything to Judge.
//
// Run only reads. It does not close client; the caller owns it. A Redis
// error at any point ends the wait with VerdictUnreachable (or
// VerdictCorrupt for a key it cannot read), which Run returns as a Report,
// not an error, so the caller prints and writes it like any other verdict.
//
// Run returns an error only when it could not start (ErrInvalidOptions, a
// nil client, an empty build id) or when ctx ends; it then returns no
// Report and has written nothing. Safe for concurrent use.
func Run(ctx context.Context, client rueidis.Client, buildID string, opts Options) (*Report, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidOptions)
	}
	if buildID == "" {
		return nil, fmt.Errorf("%w: empty build id", ErrInvalidOptions)
	}
	b, err := queue.Open(client, buildID, queue.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	w := waiter{rd: reader{b: b}, opts: o, start: o.Clock.Now(), build: buildID}
	obs := Observation{BuildID: buildID}
	err = w.observe(ctx, &obs)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("report: build %s: %w", buildID, ctx.Err())
	}
	if err != nil {
		obs.Err = err
	}
	return Judge(obs, o), nil
}

// waiter runs the wait phases of one Run.
type waiter struct {
	rd    reader
	opts  Options
	start time.Time
	build string
}

func (w waiter) elapsed() time.Duration { return w.opts.Clock.Now().Sub(w.start) }

// observe fills obs phase by phase; it stops at the first phase that
// decides the verdict, or at the first error.
func (w waiter) observe(ctx context.Context, obs *Observation) error {
	st, err := w.appear(ctx)
	if err != nil {
		return err
	}
	switch {
	case len(st.Meta) > 0:
		obs.Presence = PresenceMeta
	case st.Tombstone:
		obs.Presence = PresenceTombstone
		return nil
	default:
		return nil // PresenceNone: missing
	}
	if obs.Meta, err = ParseMeta(st.Meta); err != nil {
		return err
	}
	if obs.Manifest, err = w.manifest(ctx, obs.Meta); err != nil {
		return err
	}
	if obs.Meta.State != StateInitFailed {
		rounds, err := w.completeRound(ctx, obs, st.Meta)
		if err != nil {
			return err
		}
		if !rounds {
			if err := w.complete(ctx, obs); err != nil {
				return err
			}
		}
	}
	if obs.Presence != PresenceMeta {
		return nil // meta vanished while waiting: nothing left to read
	}
	if obs.Events, err = w.rd.attempts(ctx); err != nil {
		return err
	}
	obs.TestResults, err = w.testResults(ctx, st.Meta)
	return err
}

// appear polls until meta or the tombstone shows, or InitTimeout passes.
func (w waiter) appear(ctx context.Context) (queue.Presence, error) {
	for {
		st, err := w.rd.status(ctx)
		if err != nil || len(st.Meta) > 0 || st.Tombstone {
			return st, err
		}
		if w.elapsed() >= w.opts.InitTimeout || w.opts.Interrupted {
			return st, nil
		}
		if err := w.opts.Clock.Sleep(ctx, w.opts.PollInterval); err != nil {
			return st, err
		}
	}
}

// manifest returns the unit ids from meta, or from the units stream when
// meta does not list them.
func (w waiter) manifest(ctx context.Context, m Meta) ([]string, error) {
	if m.UnitIDs != nil || m.State == StateInitFailed {
		return m.UnitIDs, nil
	}
	return w.rd.manifest(ctx)
}

// complete polls until finalized_count reaches total_units, Timeout passes,
// or the workers fall silent for longer than InactiveTimeout. Meta that
// disappears while waiting means the build's state expired under the
// report: the observation becomes PresenceTombstone (VerdictExpired).
func (w waiter) complete(ctx context.Context, obs *Observation) error {
	for {
		p, err := w.rd.progress(ctx)
		if err != nil {
			return err
		}
		if len(p.Meta) == 0 {
			obs.Presence = PresenceTombstone
			return nil
		}
		m, err := ParseMeta(p.Meta)
		if err != nil {
			return err
		}
		obs.Meta, obs.Workers = m, ParseWorkers(p.Workers)
		n := m.FinalizedCount
		obs.FinalizedCount = &n
		if n >= m.TotalUnits {
			return nil
		}
		if w.opts.Interrupted {
			obs.Stall = &Stall{Cause: StallInterrupted}
			return nil
		}
		if w.elapsed() >= w.opts.Timeout {
			obs.Stall = &Stall{Cause: StallTimeout}
			return nil
		}
		if idle := idleTime(m, obs.Workers, p.NowMS); idle > w.opts.InactiveTimeout {
			obs.Stall = &Stall{Cause: StallInactive, Idle: idle}
			return nil
		}
		if err := w.opts.Clock.Sleep(ctx, w.opts.PollInterval); err != nil {
			return err
		}
	}
}

// idleTime is how long the build has shown no sign of life: the server's
// now minus the latest of ready_at and every worker's last_seen, all stamped
// by the Redis server so that no client clock is involved. No stamp at all
// counts as no idle time.
func idleTime(m Meta, workers []Worker, nowMS int64) time.Duration {
	latest := m.ReadyAtMS
	for _, wk := range workers {
		latest = max(latest, wk.LastSeenMS)
	}
	if latest == 0 {
		return 0
	}
	return time.Duration(nowMS-latest) * time.Millisecond
}
