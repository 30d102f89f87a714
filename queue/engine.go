package queue

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/hopper-queue/hopper/queue/internal/engine"
	"github.com/hopper-queue/hopper/queue/internal/meter"
	"github.com/hopper-queue/hopper/queue/internal/txn"
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

// core is what a Build's transitions share: the build's keys and options,
// the engine that runs them (package engine), and what the Build learnt
// of the build, which only chooses what to read (the units of entries,
// the read-ahead of each worker, whether WATCH works). It is the engine's
// Domain: it plans and decides fenced transitions (batch.go,
// batch_reads.go) and carries reads ahead (read_ahead.go).
type core struct {
	eng        *engine.Engine[Reservation, batchTrip]
	client     rueidis.Client
	schema     *schema
	opts       Options
	meter      *instruments
	entries    *entryUnits // see entry_units.go
	ahead      readAheads  // see read_ahead.go
	watchWorks atomic.Bool // a probe's WATCH was answered (see unsupported.go)
}

func newCore(client rueidis.Client, sc *schema, o Options, m *instruments) *core {
	e := &core{client: client, schema: sc, opts: o, meter: m, entries: &entryUnits{}}
	e.eng = engine.New[Reservation, batchTrip](e, engine.Config{
		Client: client, Inline: o.Engine == EngineInline, Meter: (*meter.Instruments)(m), WatchDropped: e.watchDropped,
		Policy: txn.Policy{MaxAttempts: o.MaxAttempts, BackoffFloor: o.BackoffFloor, BackoffCeil: o.BackoffCeil,
			ClusterWait: o.ClusterWait, ResolveWait: o.ResolveWait},
		GuardTTL: o.TTL})
	e.entries.off = e.eng.Inline() // every entry ranged (entry_units.go)
	return e
}

// commit runs try until it commits or decides there is nothing to commit
// (engine.Engine.Commit), as workerGuard's worker.
func (e *core) commit(ctx context.Context, mode, workerGuard string, try engine.Attempt) error {
	return refusedCommand(e.eng.Commit(ctx, mode, workerGuard, try))
}

// commitWorker runs p (engine.WorkerPlan).
func (e *core) commitWorker(ctx context.Context, p engine.WorkerPlan) error {
	return refusedCommand(e.eng.CommitWorker(ctx, p))
}
