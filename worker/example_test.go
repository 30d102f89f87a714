package worker_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
)

// Three workers run one build: the first to arrive publishes the units, all
// of them take units until every unit is finalized, and the report gives the
// verdict from the attempt log. In CI each worker is its own process with
// the same build id; here they are goroutines sharing a client.
func Example() {
	ctx := context.Background()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	buildID := os.Getenv("CI_PIPELINE_ID") // every job of a GitLab pipeline shares it
	if buildID == "" {
		buildID = "laptop-" + strconv.FormatInt(time.Now().UnixNano(), 36) // no CI: a new build each run
	}
	suite := worker.Suite{Units: []string{"./api", "./db", "./web"}, Command: "go test {unit}"}
	runUnit := func(ctx context.Context, r queue.Reservation) worker.Result {
		return worker.Result{Outcome: worker.Passed, Output: []byte("ok " + r.UnitID + "\n")}
	}
	var wg sync.WaitGroup
	for _, id := range []string{"ci-1", "ci-2", "ci-3"} {
		wg.Go(func() {
			cfg := worker.Config{BuildID: buildID, WorkerID: id}
			if err := worker.Run(ctx, client, suite, cfg, runUnit); err != nil {
				log.Fatal(err)
			}
		})
	}
	wg.Wait()

	r, err := report.Run(ctx, client, buildID, report.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("verdict:", r.Verdict, "exit code:", r.ExitCode) // verdict: passed exit code: 0
	// Unordered output:
	// ok ./api
	// ok ./db
	// ok ./web
	// verdict: passed exit code: 0
}
