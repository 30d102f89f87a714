package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/meter"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/metric"
)

// Defaults of Options.
const (
	DefaultTTL          = 14400 * time.Second
	DefaultMaxAttempts  = 100
	DefaultBackoffFloor = 100 * time.Microsecond
	DefaultBackoffCeil  = 20 * time.Millisecond
	DefaultResolveWait  = 10 * time.Second
	DefaultClusterWait  = 30 * time.Second
)

// Options tune a Build. The zero value means every default.
type Options struct {
	// TTL is the inactivity TTL every transition renews on the build's live
	// keys and sets on its guard keys. Default DefaultTTL; whole milliseconds.
	TTL time.Duration
	// MaxAttempts bounds how often one transition retries after losing an
	// optimistic race before it returns ErrContention. Default
	// DefaultMaxAttempts. Replies that send it to another node or say the
	// cluster cannot serve its slot do not count: ClusterWait bounds those.
	MaxAttempts int
	// BackoffFloor and BackoffCeil bound the jittered exponential wait
	// between attempts. Defaults DefaultBackoffFloor and DefaultBackoffCeil.
	BackoffFloor, BackoffCeil time.Duration
	// ResolveWait bounds how long a transition whose commit reply was lost
	// keeps trying to learn whether it was applied, even when the caller's
	// context has ended. Default DefaultResolveWait.
	ResolveWait time.Duration
	// ClusterWait bounds how long one transition keeps starting over while
	// Redis Cluster moves or fails over the build's slot (MOVED, ASK,
	// TRYAGAIN, CLUSTERDOWN), counted from the first such reply, however
	// many attempts that takes: migrating a large slot, or electing a new
	// primary, takes seconds. Past it the transition returns the last of
	// those replies. The caller's context still ends the wait. Default
	// DefaultClusterWait.
	ClusterWait time.Duration
	// Engine chooses how transitions reach Redis: EngineDefault, or
	// EngineInline, the reference the default is tested against. The
	// zero value takes the environment variable HOPPER_ENGINE, when set
	// (so that a whole test suite can run on either engine), else
	// EngineDefault.
	Engine Engine
	// MeterProvider receives the queue's metrics (see StatusOK, and
	// queue/internal/meter for the hopper.* instruments). Default: the
	// global provider, a no-op unless the program installs one.
	MeterProvider metric.MeterProvider
}

func (o Options) withDefaults() (Options, error) {
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.TTL < time.Millisecond {
		return o, fmt.Errorf("%w: TTL %v is below one millisecond", ErrInvalidArgument, o.TTL)
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxAttempts < 1 {
		return o, fmt.Errorf("%w: MaxAttempts %d is below 1", ErrInvalidArgument, o.MaxAttempts)
	}
	if o.BackoffFloor == 0 {
		o.BackoffFloor = DefaultBackoffFloor
	}
	if o.BackoffCeil == 0 {
		o.BackoffCeil = DefaultBackoffCeil
	}
	if o.BackoffFloor < 0 || o.BackoffCeil < o.BackoffFloor {
		return o, fmt.Errorf("%w: backoff %v..%v is not a range", ErrInvalidArgument, o.BackoffFloor, o.BackoffCeil)
	}
	if o.ResolveWait == 0 {
		o.ResolveWait = DefaultResolveWait
	}
	if o.ResolveWait < 0 {
		return o, fmt.Errorf("%w: ResolveWait %v is negative", ErrInvalidArgument, o.ResolveWait)
	}
	if o.ClusterWait == 0 {
		o.ClusterWait = DefaultClusterWait
	}
	if err := o.pickEngine(); err != nil {
		return o, err
	}
	if o.ClusterWait < 0 {
		return o, fmt.Errorf("%w: ClusterWait %v is negative", ErrInvalidArgument, o.ClusterWait)
	}
	return o, nil
}

// Build is one build's queue in Redis: its keys, and the transitions on its
// units. It is safe for concurrent use by many goroutines, which may act as
// many workers. It does not own the client: the caller closes it.
type Build struct {
	client rueidis.Client
	schema *schema
	opts   Options
	meter  *instruments
	core   *core // its transitions, and the engine that runs them (engine.go)
}

// Open returns the build buildID on client, under the key layout of
// BuildKeys.
func Open(client rueidis.Client, buildID string, opts Options) (*Build, error) {
	if err := checkBuildID(buildID); err != nil {
		return nil, err
	}
	return OpenKeys(client, BuildKeys(buildID), opts)
}

// OpenKeys returns the build whose keys are keys (see ScriptKeys for
// Transition's layout).
func OpenKeys(client rueidis.Client, keys Keys, opts Options) (*Build, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if keys.prefix == "" {
		return nil, fmt.Errorf("%w: keys not made by BuildKeys or ScriptKeys", ErrInvalidArgument)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	sc, meter := newSchema(keys, o.TTL), newInstruments(o.MeterProvider)
	return &Build{client: client, schema: sc, opts: o, meter: meter, core: newCore(client, sc, o, meter)}, nil
}

// Keys returns the build's key names.
func (b *Build) Keys() Keys { return b.schema.keys }

// Status labels of the hopper.transitions counter: Transition's status
// replies, plus "error" for a transition that returned an error.
const (
	StatusOK        = "OK"
	StatusNone      = "NONE"
	StatusFinalized = "FINALIZED"
	StatusRequeued  = "REQUEUED"
	StatusStale     = "STALE"
	StatusCorrupt   = "CORRUPT"
	StatusError     = "error"
)

// metricModes are the mode labels; metricStatuses the status labels.
var (
	metricModes = []string{ModeDeliveryAccounting, ModeReclaim, ModeHeartbeat, ModeFinalize, ModeRequeue,
		ModeAbandoned, ModeLiveness, modePrebuilt}
	metricStatuses = []string{StatusOK, StatusNone, StatusFinalized, StatusRequeued, StatusStale, StatusCorrupt, StatusError}
)

// instruments are a Build's metrics, labelled by the modes and statuses
// above (see package meter).
type instruments meter.Instruments

func newInstruments(mp metric.MeterProvider) *instruments {
	return (*instruments)(meter.New(mp, metricModes, metricStatuses))
}

// observe records one finished transition.
func (in *instruments) observe(ctx context.Context, mode, status string, start time.Time) {
	(*meter.Instruments)(in).Observe(ctx, mode, status, start)
}

// abort counts an EXEC of mode aborted by a concurrent write.
func (in *instruments) abort(ctx context.Context, mode string) {
	(*meter.Instruments)(in).Abort(ctx, mode)
}

// retry counts an attempt of mode after its first.
func (in *instruments) retry(ctx context.Context, mode string) {
	(*meter.Instruments)(in).Retry(ctx, mode)
}

// statusOf maps a transition's error to its status label; ok is the status
// of a transition that returned no error.
func statusOf(err error, ok string) string {
	switch {
	case err == nil:
		return ok
	case isStale(err):
		return StatusStale
	case isCorrupt(err):
		return StatusCorrupt
	}
	return StatusError
}
