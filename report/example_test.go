package report_test

import (
	"fmt"
	"os"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
)

// Judge gives the verdict from what was observed; Run does the observing
// against Redis. Here a two-unit build whose second unit failed.
func ExampleJudge() {
	var log []events.Event
	for _, line := range []string{
		`{"type":"delivered","unit_id":"./api","worker_id":"ci-1","retry_index":0,"reclaim_count":0,"ownership_generation":1,"at_ms":1,"stream":"units","entry_id":"1-0","delivery_count":1}`,
		`{"type":"finalized","unit_id":"./api","worker_id":"ci-1","retry_index":0,"reclaim_count":0,"ownership_generation":1,"at_ms":2,"outcome":"passed","duration_ms":812,"reason":null,"errors":null,"stream":"units","entry_id":"1-0"}`,
		`{"type":"delivered","unit_id":"./db","worker_id":"ci-2","retry_index":0,"reclaim_count":0,"ownership_generation":1,"at_ms":3,"stream":"units","entry_id":"2-0","delivery_count":1}`,
		`{"type":"finalized","unit_id":"./db","worker_id":"ci-2","retry_index":0,"reclaim_count":0,"ownership_generation":1,"at_ms":4,"outcome":"failed","duration_ms":40,"reason":"test_failure","errors":[{"example_id":"TestOpen","description":"TestOpen","class":"FAIL","message":"db_test.go:12: connection refused","backtrace":[]}],"stream":"units","entry_id":"2-0"}`,
	} {
		ev, err := events.Decode([]byte(line))
		if err != nil {
			panic(err)
		}
		log = append(log, ev)
	}
	finalized := int64(2)
	r := report.Judge(report.Observation{
		BuildID:        "1234-1",
		Presence:       report.PresenceMeta,
		Meta:           report.Meta{State: report.StateReady, TotalUnits: 2, FinalizedCount: 2, UnitType: "package"},
		Manifest:       []string{"./api", "./db"},
		FinalizedCount: &finalized,
		Events:         log,
	}, report.Options{})
	_ = r.WriteConsole(os.Stdout)
	fmt.Println("exit code", r.ExitCode)
	// Output:
	// report: build 1234-1: failed
	//   1 of 2 units failed
	//   units: 2 total, 2 finalized
	//   failed: ./db (test_failure, worker ci-2) FAIL: db_test.go:12: connection refused
	// exit code 1
}
