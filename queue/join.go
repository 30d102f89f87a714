package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fingerprint"
)

// Defaults of JoinOptions.
const (
	DefaultInitTimeout  = 300 * time.Second
	DefaultPollInterval = 500 * time.Millisecond
)

// JoinOptions tune Join. The zero value means every default.
type JoinOptions struct {
	// InitTimeout bounds how long a worker waits for someone to publish the
	// build. Default DefaultInitTimeout.
	InitTimeout time.Duration
	// PollInterval is the wait between two looks while another worker holds
	// the lease. Default DefaultPollInterval.
	PollInterval time.Duration
	// LeaseTTL is the expiry of the lease this worker takes to publish.
	// Default DefaultLeaseTTL.
	LeaseTTL time.Duration
	// TombstoneTTL is passed to Publish. Default DefaultTombstoneTTL.
	TombstoneTTL time.Duration
}

func (o JoinOptions) withDefaults() (JoinOptions, error) {
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"init timeout", &o.InitTimeout, DefaultInitTimeout},
		{"poll interval", &o.PollInterval, DefaultPollInterval},
		{"lease TTL", &o.LeaseTTL, DefaultLeaseTTL},
		{"tombstone TTL", &o.TombstoneTTL, DefaultTombstoneTTL},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < time.Millisecond {
			return o, errInvalid("%s %v is below one millisecond", d.name, *d.v)
		}
	}
	return o, nil
}

// Joined is a worker's view of the build it joined.
type Joined struct {
	// Manifest is the build's, as published (by this worker or another).
	Manifest Manifest
	// Published is true when this worker published the build.
	Published bool
	// ReadyAtMS is when the build was published, by the server's clock.
	ReadyAtMS int64
}

// Join makes worker a member of the build whose manifest it computed as m:
// it loads the published build, or publishes it from m when no one has.
// Until opts.InitTimeout passes it repeats:
//  1. Look at meta and the tombstone in one round trip.
//  2. Ready: check that the published fingerprint is m's and return the
//     published manifest.
//  3. Published in failure mode: return an *InitFailedError with its load
//     errors.
//  4. Tombstone without meta: the build's state is gone; return
//     ErrBuildBurnt (choose a new build id). Join never publishes again.
//  5. Try the lease. Won: publish from m and look again at once (also when
//     the lease was lost or someone else published first). When the
//     publish's outcome was unknown and the look does not find the build,
//     publish again at once with the same lease, which may still be held.
//  6. Not won: past the timeout return ErrNeverInitialized; else wait
//     opts.PollInterval and look again. A dead publisher's lease expires.
//
// A fingerprint mismatch (the published build is another suite) returns a
// *FingerprintMismatchError naming the inputs that differ, after recording
// a worker_error (phase init) in the build's log; nothing else is written on
// any refusal. m is checked before anything is sent. When ctx ends, Join
// returns ctx.Err(); a lease it took then simply expires.
func (b *Build) Join(ctx context.Context, worker string, m Manifest, opts JoinOptions) (Joined, error) {
	if err := checkID("worker id", worker); err != nil {
		return Joined{}, err
	}
	if err := b.schema.checkLifecycleKeys(); err != nil {
		return Joined{}, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return Joined{}, err
	}
	local, err := m.normalized(b.opts.TTL)
	if err != nil {
		return Joined{}, err
	}
	start := time.Now()
	deadline := start.Add(opts.InitTimeout)
	var lease, retry Lease
	for {
		s, err := b.Status(ctx)
		if err != nil {
			return Joined{}, ended(ctx, err)
		}
		switch {
		case s.Published && s.State == StateReady:
			published := lease.Token != "" && s.Publisher == lease.Token
			if !fingerprint.Equal(local.Fingerprint, s.Manifest.Fingerprint) {
				return Joined{}, b.refuseMismatch(ctx, worker, local, s.Manifest)
			}
			return Joined{Manifest: s.Manifest, Published: published, ReadyAtMS: s.ReadyAtMS}, nil
		case s.Published:
			return Joined{}, &InitFailedError{BuildID: b.schema.buildName(), LoadErrors: s.Manifest.LoadErrors}
		case s.Tombstone:
			return Joined{}, fmt.Errorf("%w: build %s was published before and its state is gone (expired or deleted): choose a new build id",
				ErrBuildBurnt, b.schema.buildName())
		}

		// After a publish whose outcome was unknown and which the look
		// above did not find, this worker may still hold its lease: publish
		// again with it rather than wait for it to expire. Publish's checks
		// refuse a second commit should the first one land after all.
		l, won := retry, retry.Token != ""
		retry = Lease{}
		if !won {
			if l, won, err = b.TryLease(ctx, worker, opts.LeaseTTL); err != nil {
				return Joined{}, ended(ctx, err)
			}
		}
		if won {
			lease = l
			err := b.Publish(ctx, l, m, opts.TombstoneTTL)
			if errors.Is(err, ErrOutcomeUnknown) && time.Now().Before(deadline) {
				retry = l // past the deadline, the lease is tried as usual
			}
			switch {
			case err == nil, errors.Is(err, ErrLeaseLost), errors.Is(err, ErrAlreadyPublished),
				errors.Is(err, ErrBuildBurnt), errors.Is(err, ErrOutcomeUnknown):
				continue // the next look tells what happened
			}
			return Joined{}, ended(ctx, err)
		}
		if !time.Now().Before(deadline) {
			return Joined{}, fmt.Errorf("%w: build %s (waited %.0fs)", ErrNeverInitialized, b.schema.buildName(), time.Since(start).Seconds())
		}
		// Cut at the deadline: a poll interval longer than what is left
		// of the init timeout must not stretch the wait past it.
		if err := sleep(ctx, min(opts.PollInterval, time.Until(deadline))); err != nil {
			return Joined{}, err
		}
	}
}

// ended is ctx.Err() itself for a call that failed once ctx ended, as
// Join promises, rather than that call's error wrapping it; else err.
func ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// refuseMismatch records why worker will not run the build and returns the
// error that says so.
func (b *Build) refuseMismatch(ctx context.Context, worker string, local, published Manifest) error {
	mismatch := &FingerprintMismatchError{
		BuildID:   b.schema.buildName(),
		Local:     local.Fingerprint.Sum,
		Published: published.Fingerprint.Sum,
		Inputs:    fingerprint.Diff(local.Fingerprint, published.Fingerprint),
	}
	ev, err := events.WorkerError{
		WorkerID: worker, Phase: events.PhaseInit,
		Class: "queue.ErrFingerprintMismatch", Message: mismatch.Error(),
	}.Encode()
	if err == nil {
		err = b.AppendPrebuilt(ctx, worker, ev)
	}
	if err != nil {
		return fmt.Errorf("%w (recording it failed: %v)", mismatch, err)
	}
	return mismatch
}

// The lifecycle of a build (TryLease, Publish, Status, Join) uses the two
// keys the transitions never touch: the publisher's lease and the tombstone.

// buildName is the build id when the keys carry one ("hopper:{id}:..."),
// else the meta key: for messages only.
func (sc *schema) buildName() string {
	k := sc.keys.Meta
	if i, j := strings.IndexByte(k, '{'), strings.IndexByte(k, '}'); i >= 0 && j > i+1 {
		return k[i+1 : j]
	}
	return k
}

// checkLifecycleKeys refuses a build opened with ScriptKeys, which names no
// leader or tombstone key: such builds are published by their callers, not
// by Publish.
func (sc *schema) checkLifecycleKeys() error {
	if sc.keys.Leader == "" || sc.keys.Exists == "" {
		return errInvalid("keys of %s name no leader or tombstone key (made by ScriptKeys?): open the build with Open or BuildKeys", sc.keys.Meta)
	}
	return nil
}
