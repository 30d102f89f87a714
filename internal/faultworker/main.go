// Command faultworker is one hopper worker as its own OS process, for the
// fault tests in integration/ (fault_*_test.go): they build it into a temp
// folder, run several against a container's Redis, and then pause, restart,
// SIGKILL or SIGSTOP them or their Redis.
//
// It runs worker.Run with a unit function that runs no shell: each unit
// "runs" by sleeping -unit-time (the first attempt of -slow-unit sleeps
// -slow-time instead) and passes. Around each attempt it prints marker lines
// to stdout, which the tests read to know what a worker is doing:
//
//	@start <unit> <reclaim_count> <retry_index>
//	@end <unit>
//
// The worker's own lines go to stderr; on return it prints
// "@exit <code> <error>" to stderr and exits with worker.ExitCode. Redis
// that cannot be reached when the client is made exits 2 as well.
//
// It is a test helper, not a product: the hopper command (cmd/hopper) is the
// real worker process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
)

func main() { os.Exit(run()) }

func run() int {
	var (
		cfg         worker.Config
		addr        string
		units       string
		unitTime    time.Duration
		slowUnit    string
		slowTime    time.Duration
		connTimeout time.Duration
		user        string
	)
	flag.StringVar(&addr, "redis", "", "Redis address host:port")
	flag.StringVar(&user, "user", "", "ACL user to connect as (its password is read from HOPPER_REDIS_PASSWORD)")
	flag.StringVar(&cfg.BuildID, "build", "", "build id")
	flag.StringVar(&cfg.WorkerID, "worker", "", "worker id")
	flag.StringVar(&units, "units", "", "comma-separated unit ids")
	flag.DurationVar(&unitTime, "unit-time", 100*time.Millisecond, "how long each attempt runs")
	flag.StringVar(&slowUnit, "slow-unit", "", "a unit whose first attempt (reclaim_count 0) runs -slow-time")
	flag.DurationVar(&slowTime, "slow-time", time.Hour, "how long the first attempt of -slow-unit runs")
	flag.DurationVar(&connTimeout, "conn-timeout", time.Second, "the client's read/write timeout (rueidis ConnWriteTimeout)")
	flag.DurationVar(&cfg.Timeout, "timeout", 2*time.Second, "worker.Config.Timeout")
	flag.DurationVar(&cfg.MaxUnitDuration, "max-unit-duration", time.Minute, "worker.Config.MaxUnitDuration")
	flag.IntVar(&cfg.MaxReclaims, "max-reclaims", 3, "worker.Config.MaxReclaims")
	flag.DurationVar(&cfg.TTL, "ttl", 10*time.Minute, "worker.Config.TTL")
	flag.DurationVar(&cfg.TombstoneTTL, "tombstone-ttl", time.Hour, "worker.Config.TombstoneTTL")
	flag.DurationVar(&cfg.InitTimeout, "init-timeout", 10*time.Second, "worker.Config.InitTimeout")
	flag.DurationVar(&cfg.Block, "block", 50*time.Millisecond, "worker.Config.Block")
	flag.DurationVar(&cfg.PollInterval, "poll", 20*time.Millisecond, "worker.Config.PollInterval")
	flag.Parse()

	cfg.Output, cfg.Log = os.Stdout, os.Stderr
	suite := worker.Suite{Units: strings.Split(units, ","), UnitType: "package", Command: "faultworker"}
	if units == "" {
		suite.Units = nil
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{addr}, DisableCache: true, ConnWriteTimeout: connTimeout,
		ClientName: "faultworker-" + cfg.WorkerID,
		Username:   user, Password: os.Getenv("HOPPER_REDIS_PASSWORD"),
	})
	if err != nil {
		return exit(fmt.Errorf("connect to %s: %w", addr, err))
	}
	defer client.Close()

	err = worker.Run(ctx, client, suite, cfg, func(ctx context.Context, r queue.Reservation) worker.Result {
		fmt.Printf("@start %s %d %d\n", r.UnitID, r.ReclaimCount, r.RetryIndex)
		d := unitTime
		if r.UnitID == slowUnit && r.ReclaimCount == 0 {
			d = slowTime
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return worker.Result{Outcome: worker.Failed, NoRequeue: true}
		}
		fmt.Printf("@end %s\n", r.UnitID)
		return worker.Result{Outcome: worker.Passed, Output: []byte("ok " + r.UnitID + "\n")}
	})
	return exit(err)
}

func exit(err error) int {
	code := worker.ExitCode(err)
	fmt.Fprintf(os.Stderr, "@exit %d %v\n", code, err)
	return code
}
