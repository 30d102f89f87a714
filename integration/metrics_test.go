package integration

import (
	"context"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The queue reports its transitions through the OpenTelemetry metric API
// when the caller installs a provider.
func TestMetrics(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	reader := sdkmetric.NewManualReader()
	b, err := queue.OpenKeys(e.client, e.keys, queue.Options{
		TTL: ttlMS * time.Millisecond, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	require.NoError(t, err)
	r := e.reservation("w1")
	require.NoError(t, b.Heartbeat(e.ctx, r))
	require.NoError(t, b.Finalize(e.ctx, r, queue.Result{Outcome: "passed"}))
	require.ErrorIs(t, b.Finalize(e.ctx, r, queue.Result{Outcome: "passed"}), queue.ErrStale)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	counts := map[[2]string]int64{}
	var durations uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name != "hopper.transitions" {
					continue
				}
				for _, dp := range data.DataPoints {
					mode, _ := dp.Attributes.Value(attribute.Key("mode"))
					status, _ := dp.Attributes.Value(attribute.Key("status"))
					counts[[2]string{mode.AsString(), status.AsString()}] += dp.Value
				}
			case metricdata.Histogram[float64]:
				if m.Name == "hopper.transition.duration" {
					for _, dp := range data.DataPoints {
						durations += dp.Count
					}
				}
			}
		}
	}
	assert.Equal(t, map[[2]string]int64{
		{"heartbeat", "OK"}:   1,
		{"finalize", "OK"}:    1,
		{"finalize", "STALE"}: 1,
	}, counts)
	assert.EqualValues(t, 3, durations)
}
