// Package bench is hopper's benchmark harness (issue 5): it drains builds of
// N units with 1, 8, 32 and 128 concurrent workers against the container
// Redis, through queue's typed API and, when HOPPER_REFERENCE_SCRIPT names
// it, through the reference Lua script on the same server, and prints one
// table comparing the two. It is test code only, so nothing outside tests
// ever runs a script.
//
// Run it with `make bench` (or `make bench-quick`). Environment:
//
//	HOPPER_BENCH=1               run the harness (otherwise only its pure helpers are tested)
//	HOPPER_BENCH_UNITS=2000      units per build
//	HOPPER_BENCH_WORKERS=1,8,32,128
//	HOPPER_BENCH_ROUNDS=3        builds per side and worker count, ours and the script alternating
//	HOPPER_REFERENCE_SCRIPT=path the reference transition.lua; unset: ours only
//	HOPPER_BENCH_API=typed       ours through the typed API, or transition: queue.Transition (make bench-compat)
//	HOPPER_BENCH_AUTOPIPE=off    ours' client with rueidis's DisableAutoPipelining (default: as rueidis sets it up)
//
// Speed is reported, never asserted: the targets of issue 29 are printed as
// PASS/MISS columns. The run fails only when a build does not drain
// correctly (every unit finalized once, the right units requeued).
package bench

import (
	"os"
	"testing"

	"github.com/hopper-queue/hopper/internal/redistest"
)

var srv *redistest.Server

// TestMain starts a Redis container only when the harness runs: `make test`
// runs this package's pure tests without paying for a container.
func TestMain(m *testing.M) {
	if os.Getenv("HOPPER_BENCH") == "" {
		os.Exit(m.Run())
	}
	os.Exit(redistest.Main(m, &srv))
}
