package meter

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
)

// With no meter provider installed, recording costs no allocation: the
// instruments stay in the hot path of every transition.
func TestMetricsOffAllocateNothing(t *testing.T) {
	in := New(noop.NewMeterProvider(), []string{"finalize"}, []string{"OK"})
	ctx := context.Background()
	in.Observe(ctx, "finalize", "OK", time.Now()) // builds the attribute set once
	in.Abort(ctx, "finalize")
	allocs := testing.AllocsPerRun(1000, func() {
		in.Observe(ctx, "finalize", "OK", time.Now())
		in.Abort(ctx, "finalize")
		in.Retry(ctx, "finalize")
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per transition's metrics, want 0", allocs)
	}
}

func BenchmarkMetricsOff(b *testing.B) {
	in := New(nil, []string{"heartbeat"}, []string{"OK"})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		in.Observe(ctx, "heartbeat", "OK", time.Now())
	}
}
