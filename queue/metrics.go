package queue

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Status labels of the hopper.transitions counter: Transition's status
// replies, plus "error" for a transition that returned an error.
const (
	StatusOK        = "OK"
	StatusNone      = "NONE"
	StatusFinalized = "FINALIZED"
	StatusRequeued  = "REQUEUED"
	StatusStale     = "STALE"
	StatusCorrupt   = "CORRUPT"
	StatusError     = "error"
)

// meterName is the instrumentation scope of the queue's metrics.
const meterName = "github.com/hopper-queue/hopper/queue"

// instruments are the queue's metrics, read by the benchmark harness and by
// anyone who installs a meter provider:
//
//	hopper.transitions           counter   {mode, status}
//	hopper.transition.duration   histogram {mode} seconds, call to return
//	hopper.transaction.aborts    counter   {mode} EXECs aborted by a concurrent write
//	hopper.transaction.retries   counter   {mode} attempts after the first
//
// With the default (no-op) provider each call costs a few nanoseconds and no
// allocation: attribute sets are built once per mode and status.
type instruments struct {
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

// metricModes are the mode labels; metricStatuses the status labels.
var (
	metricModes = []string{ModeDeliveryAccounting, ModeReclaim, ModeHeartbeat, ModeFinalize, ModeRequeue,
		ModeAbandoned, ModeLiveness, modePrebuilt}
	metricStatuses = []string{StatusOK, StatusNone, StatusFinalized, StatusRequeued, StatusStale, StatusCorrupt, StatusError}
)

func newInstruments(mp metric.MeterProvider) *instruments {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(meterName)
	in := &instruments{
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
	for _, mode := range metricModes {
		set := metric.WithAttributeSet(attribute.NewSet(attribute.String("mode", mode)))
		in.byMode[mode] = []metric.AddOption{set}
		in.byRecord[mode] = []metric.RecordOption{set}
		for _, status := range metricStatuses {
			in.byStatus[[2]string{mode, status}] = []metric.AddOption{
				metric.WithAttributeSet(attribute.NewSet(attribute.String("mode", mode), attribute.String("status", status))),
			}
		}
	}
	return in
}

// observe records one finished transition.
func (in *instruments) observe(ctx context.Context, mode, status string, start time.Time) {
	in.transitions.Add(ctx, 1, in.byStatus[[2]string{mode, status}]...)
	in.duration.Record(ctx, time.Since(start).Seconds(), in.byRecord[mode]...)
}

func (in *instruments) abort(ctx context.Context, mode string) {
	in.aborts.Add(ctx, 1, in.byMode[mode]...)
}

func (in *instruments) retry(ctx context.Context, mode string) {
	in.retries.Add(ctx, 1, in.byMode[mode]...)
}

// statusOf maps a transition's error to its status label; ok is the status
// of a transition that returned no error.
func statusOf(err error, ok string) string {
	switch {
	case err == nil:
		return ok
	case isStale(err):
		return StatusStale
	case isCorrupt(err):
		return StatusCorrupt
	}
	return StatusError
}
