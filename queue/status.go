package queue

import (
	"context"
	"fmt"
)

// BuildState is a published build's state, meta's state field.
type BuildState string

const (
	// StateReady: the units are queued; workers may take them.
	StateReady BuildState = stateReady
	// StateInitFailed: the manifest had load errors; nothing is queued.
	StateInitFailed BuildState = stateInitFailed
)

// Status is a build as one look at meta and the tombstone shows it.
type Status struct {
	// Published is true when meta exists; State, Manifest, ReadyAtMS and
	// Publisher are then set.
	Published bool
	// Tombstone is true while the build id's tombstone lives: it was
	// published once. Tombstone without Published means the build's state
	// is gone (expired or deleted) and the id must not be reused.
	Tombstone bool
	State     BuildState
	Manifest  Manifest
	// ReadyAtMS is when the build was published, by the server's clock.
	ReadyAtMS int64
	// FinalizedCount is how many units have their final state.
	FinalizedCount int64
	// Publisher is the lease token of the worker that published the build.
	Publisher string
}

// Gone reports whether the build was published once and its state is no
// longer there: its id is burnt.
func (s Status) Gone() bool { return s.Tombstone && !s.Published }

// Status reads the tombstone and meta in one round trip. It writes nothing.
// Meta that is present but unreadable is ErrCorrupt.
func (b *Build) Status(ctx context.Context) (Status, error) {
	if err := b.checkLifecycleKeys(); err != nil {
		return Status{}, err
	}
	c := b.client
	ctx, cancel := boundedRead(ctx, readTimeout)
	defer cancel()
	// The two reads are not one atomic step, and a publish that writes
	// meta and the tombstone at once may land between them. Tombstone
	// first: then it shows as published (meta, no tombstone yet), never as
	// gone (a tombstone, no meta yet), which would burn a build id that was
	// just published.
	res := c.DoMulti(ctx,
		c.B().Exists().Key(b.keys.Exists).Build(),
		c.B().Hgetall().Key(b.keys.Meta).Build())
	meta, err := res[1].AsStrMap()
	if err != nil {
		return Status{}, fmt.Errorf("queue: reading meta of %s: %w", b.keys.Meta, err)
	}
	n, err := res[0].AsInt64()
	if err != nil {
		return Status{}, fmt.Errorf("queue: reading tombstone %s: %w", b.keys.Exists, err)
	}
	s, err := parseStatus(meta)
	s.Tombstone = n == 1
	return s, err
}

// parseStatus reads a build's meta hash; empty means not published. It
// reads it with ParseMeta, then requires what hopper's Publish writes.
func parseStatus(meta map[string]string) (Status, error) {
	if len(meta) == 0 {
		return Status{}, nil
	}
	s := Status{Published: true, State: BuildState(meta[metaState]), Publisher: meta[metaPublisher]}
	pm, err := ParseMeta(meta)
	if err != nil {
		return s, err
	}
	if meta[metaReadyAt] == "" {
		return s, fmt.Errorf("%w: meta ready_at %q is not epoch milliseconds", ErrCorrupt, meta[metaReadyAt])
	}
	if raw, ok := meta[metaFinalized]; ok && raw == "" {
		return s, fmt.Errorf("%w: meta finalized_count %q is not a count", ErrCorrupt, raw)
	}
	s.ReadyAtMS, s.FinalizedCount = pm.ReadyAtMS, pm.FinalizedCount
	s.Manifest, err = parseManifest(pm)
	return s, err
}
