package queue

import (
	"fmt"
	"os"
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

// goInline turns off everything in b that shares, carries, keeps or
// learns: each gate below is the one place its machinery is switched.
func (b *Build) goInline() {
	b.inline = true
	b.clock.Fresh = true      // a TIME of each transition's own (engine.Clock)
	b.entries.off = true      // every entry ranged (entry_units.go)
	b.reclaims.Off = true     // every reservation looks (engine.ReclaimPace)
	b.watches.off = true      // no kept watches (kept_watch.go)
	b.workerGuards.Off = true // renew and trim on every commit (engine.GuardMemo)
}
