package events_test

import (
	"fmt"

	"github.com/hopper-queue/hopper/events"
)

func ExampleDelivered_Encode() {
	b, err := events.Delivered{
		Head: events.Head{
			UnitID:   "./spec/a_spec.rb",
			WorkerID: "ci-7.2",
			AtMS:     1733143440123, // from the Redis server's TIME
		},
		Stream:        "units",
		EntryID:       "1733143440000-0",
		DeliveryCount: 1,
	}.Encode()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(b))
	// Output:
	// {"type":"delivered","unit_id":"./spec/a_spec.rb","worker_id":"ci-7.2","retry_index":0,"reclaim_count":0,"ownership_generation":1,"at_ms":1733143440123,"stream":"units","entry_id":"1733143440000-0","delivery_count":1}
}

func ExampleStampPrebuilt() {
	b, err := events.WorkerError{
		WorkerID: "ci-7.2",
		Phase:    events.PhaseRedis,
		Class:    "queue.ErrCorrupt",
		Message:  "unit_state missing for ./spec/a_spec.rb",
	}.Encode()
	if err != nil {
		fmt.Println(err)
		return
	}
	stamped, err := events.StampPrebuilt(b, 1733143440123)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(stamped))
	// Output:
	// {"type":"worker_error","worker_id":"ci-7.2","phase":"redis","unit_id":null,"class":"queue.ErrCorrupt","message":"unit_state missing for ./spec/a_spec.rb","backtrace":[],"at_ms":1733143440123}
}
