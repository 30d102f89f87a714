package engine

import (
	"context"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/meter"
	"github.com/hopper-queue/hopper/queue/internal/sched"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// maxBatch bounds the transitions of one transaction: its reads and writes
// grow with each, and so does the cost of an abort.
const maxBatch = 32

// MaxLanes is how many batches of one Build may be in flight at once. One
// alone would make every transition wait for the batch ahead of it, two
// round trips, even when Redis and the network have room for more; with a
// few, transitions run alone, as they would unbatched, until more arrive at
// once than there are lanes, and only then share transactions.
const MaxLanes = 4

// Config is what an engine is made of.
type Config struct {
	Client rueidis.Client
	Policy txn.Policy
	// Inline: the inline engine (see the package doc).
	Inline bool
	// Meter counts retries and aborts; nil: none.
	Meter *meter.Instruments
	// WatchDropped tells what err, a connection lost before a commit was
	// sent, means (a proxy that hangs up on WATCH); nil: err itself.
	WatchDropped func(ctx context.Context, err error) error
	// GuardTTL is the worker guards' TTL; with Policy.ResolveWait it sizes
	// their memory (machinery.GuardMemo).
	GuardTTL time.Duration
}

// Engine runs a Build's transitions on Redis. S is the subject of a fenced
// transition, T the Domain's shape of a batch's first round trip.
type Engine[S, T any] struct {
	client       rueidis.Client
	domain       Domain[S, T]
	runner       txn.Runner[Conn, machinery.GuardRecord]
	meter        *meter.Instruments
	watchDropped func(ctx context.Context, err error) error
	inline       bool

	batches      *sched.Scheduler[*Op[S, T]]
	kept         keptReads[S, T]      // see kept_reads.go
	watches      keptWatches          // see kept_watch.go
	workerGuards *machinery.GuardMemo // the worker guards its commits wrote
	// Clock tells the server's time (machinery.Clock).
	Clock *machinery.Clock
	// Reclaims paces a reservation's looks for idle entries.
	Reclaims machinery.ReclaimPace
	// Consumers is what the server does with consumers.
	Consumers *machinery.ConsumerPolicy
}

// New returns an engine for domain d.
func New[S, T any](d Domain[S, T], c Config) *Engine[S, T] {
	e := &Engine[S, T]{client: c.Client, domain: d, meter: c.Meter, watchDropped: c.WatchDropped,
		batches:      sched.New[*Op[S, T]](sched.Limits{MaxBatch: maxBatch, MaxLanes: MaxLanes}),
		workerGuards: machinery.NewGuardMemo(c.GuardTTL, c.Policy.ResolveWait), Clock: machinery.NewClock(machinery.MonotonicNow),
		Consumers: &machinery.ConsumerPolicy{}}
	e.runner = txn.Runner[Conn, machinery.GuardRecord]{Env: env[S, T]{e}, Policy: c.Policy}
	if c.Inline {
		e.goInline()
	}
	return e
}

// goInline turns off everything in e that shares, carries, keeps or
// learns: each gate below is the one place its machinery is switched.
func (e *Engine[S, T]) goInline() {
	e.inline = true           // no batches, nothing carried (batch.go)
	e.Clock.Fresh = true      // a TIME of each transition's own (machinery.Clock)
	e.Reclaims.Off = true     // every reservation looks (machinery.ReclaimPace)
	e.watches.off = true      // no kept watches (kept_watch.go)
	e.workerGuards.Off = true // renew and trim on every commit (machinery.GuardMemo)
	e.Consumers.Off = true    // a consumer created whenever an XAUTOCLAIM would (machinery.ConsumerPolicy)
}

// Inline tells whether e is the inline engine.
func (e *Engine[S, T]) Inline() bool { return e.inline }
