package worker_test

import (
	"context"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
)

// blinkingClient answers the progress reads (HMGET meta finalized_count
// total_units) as a client whose connection just broke, while fail says
// so; every other command goes to Redis.
type blinkingClient struct {
	rueidis.Client
	broken rueidis.Client // closed: its Do replies rueidis.ErrClosing
	fail   func() bool
}

func (c *blinkingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if args := cmd.Commands(); len(args) > 0 && args[0] == "HMGET" && slices.Contains(args, "finalized_count") && c.fail() {
		return c.broken.Do(ctx, c.broken.B().Ping().Build())
	}
	return c.Client.Do(ctx, cmd)
}

// Two short outages, a unit's run apart, are two outages: the worker rides
// out each for up to Timeout from when it began. It measured the second from
// the start of the first, because a reservation and a whole unit run between
// them did not count as Redis answering, and so exited 2 at the second
// one's first failed read when the unit ran longer than Timeout.
func TestOutagesAUnitApartAreRiddenOutEach(t *testing.T) {
	broken, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	broken.Close()
	var reads atomic.Int32
	client := &blinkingClient{Client: newClient(t), broken: broken, fail: func() bool {
		// The progress read after u1 fails once, and the one after u2
		// (the next read) too.
		n := reads.Add(1)
		return n <= 2
	}}
	cfg := worker.Config{BuildID: buildID(t), WorkerID: "w1", Timeout: 300 * time.Millisecond,
		MaxUnitDuration: time.Hour, Block: 20 * time.Millisecond, Log: io.Discard, Output: io.Discard}
	err = worker.Run(t.Context(), client, worker.Suite{Units: []string{"u1", "u2"}}, cfg, func(ctx context.Context, r queue.Reservation) worker.Result {
		if r.UnitID == "u2" {
			time.Sleep(500 * time.Millisecond) // longer than Timeout
		}
		return worker.Result{Outcome: worker.Passed}
	})
	if err != nil {
		t.Fatalf("Run = %v, want nil: each outage lasted one read", err)
	}
	if got := reads.Load(); got < 3 {
		t.Errorf("got %d progress reads, want at least 3 (two failed)", got)
	}
}
