package report

import (
	"context"
	"fmt"
	"time"
)

// Options tune Run. The zero value means every default.
type Options struct {
	// PollInterval is the wait between two reads while waiting for the
	// build to appear or to complete. Default DefaultPollInterval.
	PollInterval time.Duration
	// InitTimeout bounds the wait for the build's meta or tombstone to
	// appear; past it the verdict is VerdictMissing. Default
	// DefaultInitTimeout.
	InitTimeout time.Duration
	// Timeout bounds the wait for every unit to be finalized, counted from
	// the start of Run; past it the verdict is VerdictIncomplete. Default
	// DefaultTimeout.
	Timeout time.Duration
	// InactiveTimeout gives up the wait for completion sooner when no worker
	// has shown a sign of life for longer than this: idle time is the Redis
	// server's TIME minus the latest of meta's ready_at and every worker's
	// last_seen. Default DefaultInactiveTimeout.
	InactiveTimeout time.Duration
	// AllowEmpty lets a build with zero examples pass (see Meta.Examples).
	AllowEmpty bool
	// MinExamples fails a build that selected fewer examples than this.
	// Zero means no minimum.
	MinExamples int64
	// Interrupted judges a build whose run was stopped: no wait for
	// completion, and a build not complete is incomplete with the stall
	// StallInterrupted, its units not run listed as never finalized.
	Interrupted bool
	// Clock measures Timeout and InitTimeout and sleeps between polls.
	// Default the process clock. Idle time never uses it: it compares the
	// Redis server's time with times the server stamped.
	Clock Clock
	// PartOf names the unit a unit of the build is a part of, given the
	// build's unit type: a shard's package under hopper's --go. The
	// per-test JUnit suites and the failed and flaky tests go under it.
	// Nil, or "": each unit stands alone.
	PartOf func(unitType, unit string) string
}

// Clock is the time source of Run's waits, replaceable so that tests need
// not wait real minutes. Implementations must be safe for concurrent use if
// one Clock is shared by concurrent Runs.
type Clock interface {
	// Now returns the current time; only differences between two calls are
	// used.
	Now() time.Time
	// Sleep waits for d, or returns ctx.Err() as soon as ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
}

// systemClock is the default Clock: the process's monotonic clock and a
// timer.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// withDefaults fills zero fields with the defaults and refuses the values
// that make no sense, naming the field and the value.
func (o Options) withDefaults() (Options, error) {
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"PollInterval", &o.PollInterval, DefaultPollInterval},
		{"InitTimeout", &o.InitTimeout, DefaultInitTimeout},
		{"Timeout", &o.Timeout, DefaultTimeout},
		{"InactiveTimeout", &o.InactiveTimeout, DefaultInactiveTimeout},
	}
	for _, d := range durations {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return o, fmt.Errorf("%w: %s %v is negative", ErrInvalidOptions, d.name, *d.v)
		}
	}
	if o.MinExamples < 0 {
		return o, fmt.Errorf("%w: MinExamples %d is negative", ErrInvalidOptions, o.MinExamples)
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	return o, nil
}

// filled is withDefaults for the pure callers (Judge), which only read the
// options and have no error to return: invalid values are left as they are.
func (o Options) filled() Options {
	if f, err := o.withDefaults(); err == nil {
		return f
	}
	return o
}
