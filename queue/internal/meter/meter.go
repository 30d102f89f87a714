// Package meter holds the OpenTelemetry instruments of package queue's
// transitions, read by the benchmark harness and by anyone who installs a
// meter provider. Which modes and statuses there are is the queue's to
// say (queue/build.go); this package only counts them, at no allocation
// per transition.
package meter

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Name is the instrumentation scope of the queue's metrics.
const Name = "github.com/hopper-queue/hopper/queue"

// Instruments are the queue's metrics:
//
//	hopper.transitions           counter   {mode, status}
//	hopper.transition.duration   histogram {mode} seconds, call to return
//	hopper.transaction.aborts    counter   {mode} EXECs aborted by a concurrent write
//	hopper.transaction.retries   counter   {mode} attempts after the first
//
// With the default (no-op) provider each call costs a few nanoseconds and no
// allocation: attribute sets are built once per mode and status.
type Instruments struct {
	transitions metric.Int64Counter
	duration    metric.Float64Histogram
	aborts      metric.Int64Counter
	retries     metric.Int64Counter

	// Options built once per label, passed as stored slices: a variadic
	// call through an interface would allocate its argument slice each time.
	byMode   map[string][]metric.AddOption
	byRecord map[string][]metric.RecordOption
	byStatus map[[2]string][]metric.AddOption
}

// New makes the instruments on mp (nil: the global provider), with the
// attribute sets of every mode and every (mode, status) pair built ahead.
// A mode or status not given records with no attributes.
func New(mp metric.MeterProvider, modes, statuses []string) *Instruments {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(Name)
	in := &Instruments{
		byMode:   map[string][]metric.AddOption{},
		byRecord: map[string][]metric.RecordOption{},
		byStatus: map[[2]string][]metric.AddOption{},
	}
	// Errors from instrument creation only mean a misconfigured provider;
	// the returned instruments are then no-ops, which is the right fallback.
	in.transitions, _ = m.Int64Counter("hopper.transitions", metric.WithDescription("Transitions by mode and status."))
	in.duration, _ = m.Float64Histogram("hopper.transition.duration", metric.WithUnit("s"), metric.WithDescription("Time from call to return of a transition, retries included."))
	in.aborts, _ = m.Int64Counter("hopper.transaction.aborts", metric.WithDescription("EXECs aborted because a watched guard changed."))
	in.retries, _ = m.Int64Counter("hopper.transaction.retries", metric.WithDescription("Transaction attempts after the first."))
	for _, mode := range modes {
		set := metric.WithAttributeSet(attribute.NewSet(attribute.String("mode", mode)))
		in.byMode[mode] = []metric.AddOption{set}
		in.byRecord[mode] = []metric.RecordOption{set}
		for _, status := range statuses {
			in.byStatus[[2]string{mode, status}] = []metric.AddOption{
				metric.WithAttributeSet(attribute.NewSet(attribute.String("mode", mode), attribute.String("status", status))),
			}
		}
	}
	return in
}

// Observe records one finished transition, started at start.
func (in *Instruments) Observe(ctx context.Context, mode, status string, start time.Time) {
	in.transitions.Add(ctx, 1, in.byStatus[[2]string{mode, status}]...)
	in.duration.Record(ctx, time.Since(start).Seconds(), in.byRecord[mode]...)
}

// Abort counts an EXEC of mode aborted by a concurrent write.
func (in *Instruments) Abort(ctx context.Context, mode string) {
	in.aborts.Add(ctx, 1, in.byMode[mode]...)
}

// Retry counts an attempt of mode after its first.
func (in *Instruments) Retry(ctx context.Context, mode string) {
	in.retries.Add(ctx, 1, in.byMode[mode]...)
}
