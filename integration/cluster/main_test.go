// Package cluster tests hopper on a Redis Cluster in containers: three
// primaries with one replica each, every node announcing 127.0.0.1 and its
// own port, shared by the package; one build id per test.
//
// The builds' slots are spread over the shards, and some tests move a
// build's slot or fail its primary over in the middle of the build. Those
// change the cluster for every test, so no test here runs in parallel with
// another; each runs its own builds concurrently.
package cluster

import (
	"os"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hopper-queue/hopper/internal/redistest"
)

var (
	cl *redistest.Cluster
	// meter reads the metrics of every queue opened without a provider of
	// its own (the workers'): transaction retries and aborts by mode.
	meter = sdkmetric.NewManualReader()
)

func TestMain(m *testing.M) {
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(meter)))
	os.Exit(redistest.ClusterMain(m, &cl, redistest.ClusterOptions{Replicas: 1}))
}
