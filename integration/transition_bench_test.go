package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
)

// BenchmarkTransitionModes measures each transition of a unit's life, one
// worker, end to end against the container, on each engine: with
// -benchmem, the client's allocations per transition. Only the transition
// measured is timed; what it needs first (a read, the accounting, another
// worker's hold) is not.
//
//	go test -run '^$' -bench TransitionModes -benchmem ./integration/
func BenchmarkTransitionModes(b *testing.B) {
	for _, engine := range []queue.Engine{queue.EngineDefault, queue.EngineInline} {
		for _, m := range benchModes {
			b.Run(fmt.Sprintf("%s/%s", engine, m.name), func(b *testing.B) {
				e := newEnv(b)
				units := make([]string, 30000)
				for i := range units {
					units[i] = fmt.Sprintf("spec/u%05d_spec.rb", i)
				}
				e.publish(units, map[string]string{"max_requeues": "1000000", "requeue_tolerance": "1", "max_reclaims": "1000000"})
				build, err := queue.OpenKeys(e.client, e.keys, queue.Options{TTL: ttlMS * time.Millisecond, Engine: engine})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				m.run(b, &benchUnit{e: e, b: build})
			})
		}
	}
}

// benchUnit is the build a mode's benchmark runs on.
type benchUnit struct {
	e *env
	b *queue.Build
}

// held reads and accounts one entry for worker, untimed.
func (u *benchUnit) held(tb *testing.B, worker string) queue.Reservation {
	tb.StopTimer()
	defer tb.StartTimer()
	x, ok := u.e.reserve(worker)
	if !ok {
		tb.Fatal("build drained")
	}
	d, err := u.b.AccountDelivery(u.e.ctx, worker, x.stream, x.id, x.unit)
	if err != nil {
		tb.Fatal(err)
	}
	return queue.Reservation{WorkerID: worker, Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ,
		DeliveryCount: d.DeliveryCount, RetryIndex: d.RetryIndex, ReclaimCount: d.ReclaimCount}
}

var benchPassed = queue.Result{Outcome: "passed", DurationMS: 3}

var benchModes = []struct {
	name string
	run  func(b *testing.B, u *benchUnit)
}{
	{queue.ModeDeliveryAccounting, func(b *testing.B, u *benchUnit) {
		for b.Loop() {
			b.StopTimer()
			x, ok := u.e.reserve("w1")
			b.StartTimer()
			if !ok {
				b.Fatal("build drained")
			}
			if _, err := u.b.AccountDelivery(u.e.ctx, "w1", x.stream, x.id, x.unit); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{queue.ModeHeartbeat, func(b *testing.B, u *benchUnit) {
		r := u.held(b, "w1")
		for b.Loop() {
			if err := u.b.Heartbeat(u.e.ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{queue.ModeFinalize, func(b *testing.B, u *benchUnit) {
		for b.Loop() {
			if err := u.b.Finalize(u.e.ctx, u.held(b, "w1"), benchPassed); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{queue.ModeRequeue, func(b *testing.B, u *benchUnit) {
		failed := queue.Result{Outcome: "failed", DurationMS: 3}
		for b.Loop() {
			if _, err := u.b.Requeue(u.e.ctx, u.held(b, "w1"), failed, queue.Budgets{}); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{queue.ModeAbandoned, func(b *testing.B, u *benchUnit) {
		for b.Loop() {
			if err := u.b.Abandon(u.e.ctx, u.held(b, "w1"), 3); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{queue.ModeReclaim, func(b *testing.B, u *benchUnit) {
		for b.Loop() {
			u.held(b, "w2")
			rc, err := u.b.Reclaim(u.e.ctx, "w1", 0, 1000000)
			if err != nil || rc.Status != queue.ReclaimTaken {
				b.Fatal(rc.Status, err)
			}
		}
	}},
	{queue.ModeLiveness, func(b *testing.B, u *benchUnit) {
		for b.Loop() {
			if err := u.b.Liveness(u.e.ctx, "w1", ""); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{queue.ModeWorkerError, func(b *testing.B, u *benchUnit) {
		ev := []byte(`{"type":"worker_error","worker_id":"w1","message":"boom"}`)
		for b.Loop() {
			if err := u.b.AppendPrebuilt(u.e.ctx, "w1", ev); err != nil {
				b.Fatal(err)
			}
		}
	}},
}
