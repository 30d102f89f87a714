package worker_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
)

// Once Run has returned, whether the build completed, the worker was
// stopped or it aborted a unit, nothing it started keeps running (an aborted
// Func that honours its context included).
func TestRunLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	build := "leak-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	suite := worker.Suite{Units: []string{"a", "b", "hang"}}
	cfg := func(id string) worker.Config {
		return worker.Config{BuildID: build, WorkerID: id, Timeout: 300 * time.Millisecond,
			MaxUnitDuration: 100 * time.Millisecond, Block: 20 * time.Millisecond,
			PollInterval: 10 * time.Millisecond, Log: io.Discard, Output: io.Discard}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			errs[i] = worker.Run(t.Context(), client, suite, cfg("w"+strconv.Itoa(i)), func(ctx context.Context, r queue.Reservation) worker.Result {
				if r.UnitID == "hang" && r.ReclaimCount == 0 {
					<-ctx.Done()
				}
				return worker.Result{Outcome: worker.Passed}
			})
		})
	}
	wg.Wait()
	aborted := 0
	for _, err := range errs {
		switch {
		case errors.Is(err, worker.ErrAborted):
			aborted++
		case err != nil:
			t.Fatalf("Run = %v", err)
		}
	}
	if aborted != 1 {
		t.Errorf("%d workers aborted, want 1", aborted)
	}
	client.Close()

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines left running, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
