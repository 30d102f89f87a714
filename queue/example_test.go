package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// The examples need a Redis server: they are compiled by go vet and go
// test, never run.

// connect returns a client of the Redis the examples use.
func connect() rueidis.Client {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	return client
}

// A worker's life on one build: join it (publishing it when first), then
// reserve, heartbeat and finalize units until every unit is final. An
// ErrStale means another worker took the unit over: its result is
// dropped, never written.
func Example_worker() {
	ctx := context.Background()
	client := connect()
	defer client.Close()
	b, err := queue.Open(client, "build-42", queue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	const worker = "ci-1"
	m := queue.Manifest{UnitIDs: []string{"./api", "./db", "./web"}}
	if _, err := b.Join(ctx, worker, m, queue.JoinOptions{}); err != nil {
		log.Fatal(err)
	}
	for {
		r, ok, err := b.Reserve(ctx, worker, queue.ReserveOptions{})
		if err != nil {
			log.Fatal(err)
		}
		if !ok {
			// Nothing to take is not the end: a lost worker's units
			// come back through reclaims.
			p, err := b.Progress(ctx)
			if err != nil {
				log.Fatal(err)
			}
			if p.Complete() {
				return
			}
			if err := b.Liveness(ctx, worker, ""); err != nil {
				log.Fatal(err)
			}
			continue
		}
		// While the unit runs, renew the hold well within the timeout.
		if err := b.Heartbeat(ctx, r); errors.Is(err, queue.ErrStale) {
			continue
		} else if err != nil {
			log.Fatal(err)
		}
		res := queue.Result{Outcome: events.OutcomePassed, DurationMS: 1200}
		switch err := b.Finalize(ctx, r, res); {
		case errors.Is(err, queue.ErrStale):
			log.Printf("%s was taken over: result dropped", r.UnitID)
		case err != nil:
			log.Fatal(err)
		}
	}
}

// A reclaim takes over the unit of a worker that went quiet for the
// timeout; past the unit's reclaim budget, it finalizes it as failed
// instead. Reserve reclaims before it reads new units; a worker may also
// reclaim on its own.
func ExampleBuild_Reclaim() {
	ctx := context.Background()
	client := connect()
	defer client.Close()
	b, err := queue.Open(client, "build-42", queue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rc, err := b.Reclaim(ctx, "ci-2", 3*time.Minute, queue.DefaultMaxReclaims)
	switch {
	case errors.Is(err, queue.ErrCorrupt):
		log.Fatal("the build's state is gone: ", err)
	case err != nil:
		log.Fatal(err)
	}
	switch rc.Status {
	case queue.ReclaimTaken:
		fmt.Printf("took %s from %s at delivery %d\n", rc.UnitID, rc.PreviousWorkerID, rc.Reservation.DeliveryCount)
	case queue.ReclaimFinalized:
		fmt.Printf("%s used up its reclaims: failed\n", rc.UnitID)
	case queue.ReclaimNone:
		fmt.Println("no owner went quiet")
	}
}

// Transition is a drop-in for the transition script: the script's six
// KEYS and its ARGV in, its reply array out. STALE and CORRUPT are
// replies; bad arguments, and a build not published by hopper, are
// errors.
func ExampleTransition() {
	ctx := context.Background()
	client := connect()
	defer client.Close()
	keys := []string{
		"hopper:{build-42}:units", "hopper:{build-42}:units:priority", "hopper:{build-42}:attempts",
		"hopper:{build-42}:meta", "hopper:{build-42}:unit_state", "hopper:{build-42}:workers",
	}
	// mode, worker_id, ttl_ms, stream, entry_id, delivery_count, unit_id
	argv := []string{"heartbeat", "ci-1", "14400000", "units", "1700000000000-0", "1", "./api"}
	reply, err := queue.Transition(ctx, client, keys, argv)
	if errors.Is(err, queue.ErrUnguarded) {
		log.Fatal("not published by hopper: move all of the build's callers at once")
	}
	if err != nil {
		log.Fatal(err) // ErrInvalidArgument: refused before anything was sent
	}
	if reply[0] == "STALE" {
		fmt.Println("the unit was taken over: stop heartbeating it")
	}
}
