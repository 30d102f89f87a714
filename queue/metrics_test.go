package queue

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
)

// With no meter provider installed, recording costs no allocation: the
// instruments stay in the hot path of every transition.
func TestMetricsOffAllocateNothing(t *testing.T) {
	in := newInstruments(noop.NewMeterProvider())
	ctx := context.Background()
	in.observe(ctx, ModeFinalize, StatusOK, time.Now()) // builds the attribute set once
	in.abort(ctx, ModeFinalize)
	allocs := testing.AllocsPerRun(1000, func() {
		in.observe(ctx, ModeFinalize, StatusOK, time.Now())
		in.abort(ctx, ModeFinalize)
		in.retry(ctx, ModeFinalize)
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per transition's metrics, want 0", allocs)
	}
}

func BenchmarkMetricsOff(b *testing.B) {
	in := newInstruments(nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		in.observe(ctx, ModeHeartbeat, StatusOK, time.Now())
	}
}
