package integration

import (
	"testing"

	"github.com/hopper-queue/hopper/queue"
)

// BenchmarkHeartbeat measures one fenced transition end to end against the
// container: two round trips, and the client's allocations for it.
func BenchmarkHeartbeat(b *testing.B) {
	e := newEnv(b)
	e.publish([]string{"u1"}, nil)
	r := e.reservation("w1")
	b.ReportAllocs()
	for b.Loop() {
		if err := e.build.Heartbeat(e.ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAccountAndFinalize measures delivery accounting and finalize of
// one unit (the reads of XREADGROUP excluded).
func BenchmarkAccountAndFinalize(b *testing.B) {
	e := newEnv(b)
	units := make([]string, 20000)
	for i := range units {
		units[i] = "spec/unit_" + string(rune('a'+i%26)) + "_spec.rb" + string(rune('0'+i/26%10)) + string(rune('0'+i/260%10)) + string(rune('0'+i/2600%10))
	}
	e.publish(units, nil)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		x, ok := e.reserve("w1")
		if !ok {
			b.Skip("build drained")
		}
		b.StartTimer()
		d, err := e.build.AccountDelivery(e.ctx, "w1", x.stream, x.id, x.unit)
		if err != nil {
			b.Fatal(err)
		}
		r := queue.Reservation{WorkerID: "w1", Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ, DeliveryCount: d.DeliveryCount}
		if err := e.build.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 3}); err != nil {
			b.Fatal(err)
		}
	}
}
