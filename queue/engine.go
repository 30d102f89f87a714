package queue

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/redis/rueidis"
)

// Engine is how a Build's transitions reach Redis. Every engine decides
// each transition the same way, on what its own transaction watches and
// reads; they differ only in where those reads come from and what rides
// with them.
type Engine string

const (
	// EngineDefault shares round trips: transitions that arrive at once
	// commit in one transaction, a commit carries the next one's reads,
	// kept reads and watches serve a worker's likely next transition,
	// reservations read ahead, the server's time is told by a clock
	// anchored on its TIME replies, and what a Build learnt (the units of
	// entries, quiet reclaim looks) chooses what to read.
	EngineDefault Engine = "default"
	// EngineInline runs each transition alone on a connection of its
	// own: its WATCH and reads, a TIME of its own, its decision, its
	// commit, nothing carried and nothing kept or learnt. It is slower,
	// and it is the reference the default engine is checked against.
	EngineInline Engine = "inline"
)

// engineEnv names the environment variable that picks the engine of every
// Build whose options leave it unset.
const engineEnv = "HOPPER_ENGINE"

// pickEngine fills in o.Engine and refuses an engine it does not know.
func (o *Options) pickEngine() error {
	if o.Engine == "" {
		o.Engine = Engine(os.Getenv(engineEnv))
		if o.Engine == "" {
			o.Engine = EngineDefault
		}
	}
	switch o.Engine {
	case EngineDefault, EngineInline:
		return nil
	}
	return fmt.Errorf("%w: engine %q: want %q or %q (Options.Engine, or %s)", ErrInvalidArgument, o.Engine, EngineDefault, EngineInline, engineEnv)
}

// engine is how a Build's transitions reach Redis: the optimistic runner
// on dedicated connections, and, for the default engine, everything that
// lets transitions share round trips. Transitions hand it what they watch
// and read and how they decide (fencedOp, workerPlan, the reclaimer); it
// owns where their replies come from: fresh, batched, chained, kept reads,
// kept watches, read ahead. What it learns only chooses what to read and
// send: every decision stands on what its own transaction watched and read.
type engine struct {
	client rueidis.Client
	schema *schema
	opts   Options
	meter  *instruments
	runner runner // see txn.go

	batches      batcher                   // see batch.go
	clock        *machinery.Clock          // the server's time
	kept         keptReads                 // see kept_reads.go
	ahead        readAheads                // see read_ahead.go
	watches      keptWatches               // see kept_watch.go
	reclaims     machinery.ReclaimPace     // when a reservation looks for idle entries
	entries      *entryUnits               // see entry_units.go
	workerGuards *machinery.GuardMemo      // the worker guards its commits wrote
	consumers    *machinery.ConsumerPolicy // what the server does with consumers
	watchWorks   atomic.Bool               // a probe's WATCH was answered (see unsupported.go)
	inline       bool                      // Options.Engine is EngineInline
}

func newEngine(client rueidis.Client, sc *schema, o Options, meter *instruments) *engine {
	e := &engine{client: client, schema: sc, opts: o, meter: meter, consumers: &machinery.ConsumerPolicy{}, entries: &entryUnits{},
		workerGuards: machinery.NewGuardMemo(o.TTL, o.ResolveWait), clock: machinery.NewClock(machinery.MonotonicNow), batches: newBatcher()}
	e.runner = newRunner(e)
	if o.Engine == EngineInline {
		e.goInline()
	}
	return e
}

// goInline turns off everything in e that shares, carries, keeps or
// learns: each gate below is the one place its machinery is switched.
func (e *engine) goInline() {
	e.inline = true
	e.clock.Fresh = true      // a TIME of each transition's own (machinery.Clock)
	e.entries.off = true      // every entry ranged (entry_units.go)
	e.reclaims.Off = true     // every reservation looks (machinery.ReclaimPace)
	e.watches.off = true      // no kept watches (kept_watch.go)
	e.workerGuards.Off = true // renew and trim on every commit (machinery.GuardMemo)
	e.consumers.Off = true    // a consumer created whenever an XAUTOCLAIM would (machinery.ConsumerPolicy)
}
