package worker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
)

// redisAddr is the address of the package's test server, for the examples.
var redisAddr string

// TestMain runs the package's tests and examples against one Redis
// container (see internal/redistest). redistest.Main is not used because
// the examples need the address in a plain variable.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	srv, err := redistest.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: worker tests: no Redis to test against: %v\n  is Docker running, and was `make redis-image` run (image %s)?\n", err, redistest.Image())
		return 1
	}
	redisAddr = srv.Addr()
	code := m.Run()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Terminate(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "worker tests: %v (container left behind)\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
