package worker

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/hopper-queue/hopper/queue"
)

// Defaults of Config, also the defaults of the hopper command's flags.
// Those that queue uses too are queue's, defined there once.
const (
	DefaultTimeout          = queue.DefaultTimeout
	DefaultMaxUnitDuration  = 900 * time.Second
	DefaultMaxRequeues      = 0
	DefaultRequeueTolerance = 0.0
	DefaultMaxReclaims      = 3
	DefaultTTL              = queue.DefaultTTL
	DefaultTombstoneTTL     = queue.DefaultTombstoneTTL
	DefaultInitTimeout      = queue.DefaultInitTimeout
	DefaultBlock            = time.Second
	DefaultPollInterval     = queue.DefaultPollInterval
	DefaultLeaseTTL         = queue.DefaultLeaseTTL
)

// maxHeartbeatInterval caps the heartbeat interval, whatever the timeout.
const maxHeartbeatInterval = 30 * time.Second

// NoReclaims as Config.MaxReclaims means a unit whose owner goes silent is
// finalized as failed rather than handed to another worker.
const NoReclaims = -1

// ErrInvalidConfig: a Config value is out of range. The error names it.
var ErrInvalidConfig = errors.New("worker: invalid config")

// Config says how a worker runs. The zero value of each field means its
// default; only BuildID is required. The budgets (MaxRequeues,
// RequeueTolerance, MaxReclaims) are frozen into the build by its publisher:
// a worker that joins an existing build follows the publisher's.
type Config struct {
	// BuildID names the build; every worker of one build gives the same.
	BuildID string
	// WorkerID names this worker; unique within the build. Default
	// <hostname>-<pid>, so several workers in one process must set it.
	WorkerID string
	// Retry says whether this worker, arriving at a complete build that
	// did not pass, runs again what did not pass in a new round (see
	// queue.Build.EnterRound). The zero value never opens a round.
	Retry queue.RetrySignal

	// Timeout is how long a unit's owner may stay silent before another
	// worker reclaims it. The heartbeat runs every min(Timeout/3, 30 s).
	// It is also how long the worker rides out an unreachable Redis before
	// it exits, finding out whether a commit whose reply was lost was
	// applied included (queue.Options.ResolveWait). Default DefaultTimeout.
	Timeout time.Duration
	// MaxUnitDuration is how long one attempt may run before it is recorded
	// abandoned; past MaxUnitDuration+Timeout the worker aborts. Default
	// DefaultMaxUnitDuration.
	MaxUnitDuration time.Duration
	// MaxRequeues is how often a failed unit may be retried. Default 0.
	MaxRequeues int
	// RequeueTolerance (0..1) is the share of the build's units that may
	// enter retry at all. Default 0.
	RequeueTolerance float64
	// MaxReclaims is how often a unit may be taken from a silent owner.
	// Zero means DefaultMaxReclaims; NoReclaims (any negative) means none.
	MaxReclaims int
	// TTL is the inactivity TTL of the build's keys. Default DefaultTTL.
	TTL time.Duration
	// TombstoneTTL is how long the build id stays burnt. Default
	// DefaultTombstoneTTL.
	TombstoneTTL time.Duration
	// InitTimeout bounds the wait for some worker to publish the build.
	// Default DefaultInitTimeout.
	InitTimeout time.Duration
	// Block is how long one look for a new unit waits. Default DefaultBlock.
	Block time.Duration
	// PollInterval is the wait between looks while another worker
	// publishes. Default DefaultPollInterval.
	PollInterval time.Duration
	// LeaseTTL is how long a dead publisher blocks the build. Default
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Batch is how many units RunBatches reserves and runs at once, at
	// most; fewer near the end of the build. Default 1; Run ignores it.
	// MaxUnitDuration then bounds the run of a whole batch.
	Batch int
	// Slots is how many workers this worker knows to share the build (the
	// slots of its process): batches shrink to the units left shared among
	// them, or among the workers the build has seen when more. Default 1.
	Slots int

	// Output receives the output of each attempt whose result counts.
	// Default os.Stdout.
	Output io.Writer
	// Log receives the worker's own lines (joined, retrying, stale, heartbeat
	// trouble, abort). Default os.Stderr.
	Log io.Writer
	// Clock times units and paces the heartbeat. Default the system clock.
	Clock Clock
	// Measured, when set, is given the duration of each unit's first
	// attempt (retry index 0) whose result counted, for the suite's timings
	// (see package timings). It must be safe for concurrent use when Runs
	// share it.
	Measured func(unitID string, d time.Duration)
}

// withDefaults fills in defaults and checks every value, naming the first
// bad one.
func (c Config) withDefaults() (Config, error) {
	if c.BuildID == "" {
		return c, fmt.Errorf("%w: build id is empty", ErrInvalidConfig)
	}
	if c.WorkerID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "worker"
		}
		c.WorkerID = host + "-" + strconv.Itoa(os.Getpid())
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"timeout", &c.Timeout, DefaultTimeout},
		{"max unit duration", &c.MaxUnitDuration, DefaultMaxUnitDuration},
		{"TTL", &c.TTL, DefaultTTL},
		{"tombstone TTL", &c.TombstoneTTL, DefaultTombstoneTTL},
		{"init timeout", &c.InitTimeout, DefaultInitTimeout},
		{"block", &c.Block, DefaultBlock},
		{"poll interval", &c.PollInterval, DefaultPollInterval},
		{"lease TTL", &c.LeaseTTL, DefaultLeaseTTL},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < time.Millisecond {
			return c, fmt.Errorf("%w: %s must be positive (at least 1ms), got %v", ErrInvalidConfig, d.name, *d.v)
		}
	}
	if c.MaxUnitDuration > math.MaxInt64-c.Timeout {
		return c, fmt.Errorf("%w: max unit duration %v plus timeout %v is out of range", ErrInvalidConfig, c.MaxUnitDuration, c.Timeout)
	}
	if c.Timeout < 3*time.Millisecond {
		return c, fmt.Errorf("%w: timeout must be at least 3ms (the heartbeat runs every timeout/3), got %v", ErrInvalidConfig, c.Timeout)
	}
	if hb := HeartbeatInterval(c.Timeout); c.TTL <= c.Timeout+hb {
		// The build's keys live TTL past the last write, and a lone
		// worker running a unit writes once a heartbeat interval; across
		// an outage it rides out (up to Timeout) it writes nothing. A TTL
		// within their sum lets the whole build expire under a worker that
		// goes on as if it were there.
		return c, fmt.Errorf("%w: TTL %v must be longer than the timeout %v plus a heartbeat interval %v", ErrInvalidConfig, c.TTL, c.Timeout, hb)
	}
	for _, n := range []struct {
		name string
		v    *int
	}{{"batch", &c.Batch}, {"slots", &c.Slots}} {
		switch {
		case *n.v == 0:
			*n.v = 1
		case *n.v < 0:
			return c, fmt.Errorf("%w: %s must be at least 1, got %d", ErrInvalidConfig, n.name, *n.v)
		}
	}
	if c.MaxRequeues < 0 {
		return c, fmt.Errorf("%w: max requeues must not be negative, got %d", ErrInvalidConfig, c.MaxRequeues)
	}
	if math.IsNaN(c.RequeueTolerance) || c.RequeueTolerance < 0 || c.RequeueTolerance > 1 {
		return c, fmt.Errorf("%w: requeue tolerance must be between 0 and 1, got %v", ErrInvalidConfig, c.RequeueTolerance)
	}
	switch {
	case c.MaxReclaims == 0:
		c.MaxReclaims = DefaultMaxReclaims
	case c.MaxReclaims < 0:
		c.MaxReclaims = NoReclaims
	}
	if c.Output == nil {
		c.Output = os.Stdout
	}
	if c.Log == nil {
		c.Log = os.Stderr
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	return c, nil
}

// reclaims is MaxReclaims as a count (NoReclaims is zero).
func (c Config) reclaims() int { return max(c.MaxReclaims, 0) }

// HeartbeatInterval is how often a worker renews its hold on a running
// unit under timeout: min(timeout/3, 30 s), so that two heartbeats can be
// lost before the unit is reclaimed.
func HeartbeatInterval(timeout time.Duration) time.Duration {
	return min(timeout/3, maxHeartbeatInterval)
}

// budgets are the worker's own caps, frozen into the build if it publishes.
func (c Config) budgets() queue.Budgets {
	return queue.Budgets{MaxRequeues: c.MaxRequeues, RequeueTolerance: c.RequeueTolerance, MaxReclaims: c.reclaims()}
}

func (c Config) reserveOptions() queue.ReserveOptions {
	// After withDefaults MaxReclaims is positive or NoReclaims, which the
	// queue also reads as none.
	return queue.ReserveOptions{Timeout: c.Timeout, MaxReclaims: c.MaxReclaims, Block: c.Block}
}

func (c Config) joinOptions() queue.JoinOptions {
	return queue.JoinOptions{InitTimeout: c.InitTimeout, PollInterval: c.PollInterval, LeaseTTL: c.LeaseTTL, TombstoneTTL: c.TombstoneTTL}
}
