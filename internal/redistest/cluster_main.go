package redistest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// ClusterMain is the body of a package's TestMain when its tests share one
// cluster: it starts the cluster, stores it in *c, runs the tests,
// terminates the cluster and returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) {
//		os.Exit(redistest.ClusterMain(m, &cluster, redistest.ClusterOptions{Replicas: 1}))
//	}
//
// As with [Main], a cluster that cannot be started fails the run without
// running any test, and a node left behind fails it too.
func ClusterMain(m *testing.M, c **Cluster, opts ClusterOptions) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cl, err := StartCluster(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s: no Redis Cluster to test against: %v\n", testBinary(), err)
		if !errors.Is(err, ErrDockerUnavailable) && !errors.Is(err, ErrImageMissing) {
			fmt.Fprintf(os.Stderr, "  is Docker running, and was `make redis-image` run (image %s)?\n", Image())
		}
		return 1
	}
	*c = cl

	// A test binary past its -timeout panics without returning here, and
	// with no reaper its nodes would stay behind: remove them just before.
	if d, ok := testTimeout(); ok {
		stop := time.AfterFunc(max(d-15*time.Second, d*9/10), func() {
			fmt.Fprintf(os.Stderr, "redistest: the test binary is about to time out: terminating the cluster\n")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = cl.Terminate(ctx)
		})
		defer stop.Stop()
	}

	code := m.Run()

	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.Terminate(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// testTimeout returns the binary's -test.timeout, if any.
func testTimeout() (time.Duration, bool) {
	if !flag.Parsed() {
		flag.Parse() // testing registered its flags before TestMain
	}
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0, false
	}
	d, err := time.ParseDuration(f.Value.String())
	return d, err == nil && d > 0
}
