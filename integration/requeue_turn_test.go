package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Requeues of one Build take turns before they reach Redis (queue/tailturn.go),
// so the workers of one process do not abort one another on the tail guard
// (8 at once wait far less than the longest backoff, past which a requeue
// would race); requeues of two Builds (two processes) still race, and the
// guard keeps them correct.
func TestRequeuesTakeTurns(t *testing.T) {
	const workers, rounds = 8, 8
	for _, builds := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d builds", builds), func(t *testing.T) {
			e := newEnv(t)
			units := make([]string, workers*rounds)
			for i := range units {
				units[i] = fmt.Sprintf("u%03d", i)
			}
			e.publish(units, map[string]string{"max_requeues": "1", "requeue_tolerance": "1"})
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			open := make([]*queue.Build, builds)
			for i := range open {
				b, err := queue.OpenKeys(e.client, e.keys, queue.Options{TTL: ttlMS * time.Millisecond, MeterProvider: mp})
				require.NoError(t, err)
				open[i] = b
			}
			// Every unit is held before the first requeue: a requeued unit
			// would otherwise be read again from the priority stream.
			all := make([][]queue.Reservation, rounds)
			for r := range all {
				all[r] = make([]queue.Reservation, workers)
				for w := range all[r] {
					all[r][w] = e.reservation(fmt.Sprintf("w%02d-%d", w, r))
				}
			}
			newIDs := map[string]bool{}
			for _, held := range all {
				start := make(chan struct{})
				out := make([]queue.Requeued, workers)
				errs := make([]error, workers)
				var wg sync.WaitGroup
				for w := range held {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						out[w], errs[w] = open[w%builds].Requeue(e.ctx, held[w],
							queue.Result{DurationMS: 1, FailureSummary: "1 failure"}, queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1})
					}()
				}
				close(start)
				wg.Wait()
				for w := range held {
					require.NoError(t, errs[w], held[w].UnitID)
					require.True(t, out[w].Requeued, held[w].UnitID)
					require.False(t, newIDs[out[w].NewEntryID], "new entry id %s given twice", out[w].NewEntryID)
					newIDs[out[w].NewEntryID] = true
				}
			}
			require.Equal(t, fmt.Sprint(workers*rounds), e.hash(e.keys.Meta)["requeued_units_count"])
			n, err := e.admin.Do(e.ctx, e.admin.B().Xlen().Key(e.keys.Priority).Build()).AsInt64()
			require.NoError(t, err)
			require.EqualValues(t, workers*rounds, n)

			aborts := requeueAborts(t, reader)
			t.Logf("%d concurrent requeues over %d Builds: %d aborts", workers*rounds, builds, aborts)
			if builds == 1 {
				require.Zero(t, aborts, "requeues of one Build aborted one another")
			}
		})
	}
}

// requeueAborts sums hopper.transaction.aborts of mode requeue.
func requeueAborts(t *testing.T, reader *sdkmetric.ManualReader) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			data, ok := m.Data.(metricdata.Sum[int64])
			if !ok || m.Name != "hopper.transaction.aborts" {
				continue
			}
			for _, dp := range data.DataPoints {
				if mode, _ := dp.Attributes.Value("mode"); mode.AsString() == queue.ModeRequeue {
					n += dp.Value
				}
			}
		}
	}
	return n
}
