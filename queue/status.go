package queue

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
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
	if err := b.schema.checkLifecycleKeys(); err != nil {
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
		c.B().Exists().Key(b.schema.keys.Exists).Build(),
		c.B().Hgetall().Key(b.schema.keys.Meta).Build())
	meta, err := res[1].AsStrMap()
	if err != nil {
		return Status{}, fmt.Errorf("queue: reading meta of %s: %w", b.schema.keys.Meta, err)
	}
	n, err := res[0].AsInt64()
	if err != nil {
		return Status{}, fmt.Errorf("queue: reading tombstone %s: %w", b.schema.keys.Exists, err)
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

// Progress is how far a build is: units finalized out of all.
type Progress struct {
	Finalized, Total int64
}

// Complete reports whether every unit has its final state. An empty queue
// is not completion: units held by lost workers still come back.
func (p Progress) Complete() bool { return p.Finalized >= p.Total }

// Progress reads the build's finalized_count and total_units. It writes
// nothing. ErrCorrupt: meta is missing (the build's state expired or was
// deleted: it is never re-created), unreadable, or counts more finalized
// units than the build has.
func (b *Build) Progress(ctx context.Context) (Progress, error) {
	ctx, cancel := boundedRead(ctx, readTimeout)
	defer cancel()
	vals, err := b.client.Do(ctx, b.client.B().Hmget().Key(b.schema.keys.Meta).Field(metaFinalized, metaTotalUnits).Build()).ToArray()
	if err != nil {
		return Progress{}, fmt.Errorf("queue: reading progress of %s: %w", b.schema.keys.Meta, err)
	}
	if len(vals) != 2 {
		return Progress{}, fmt.Errorf("queue: HMGET %s replied %d values, want 2", b.schema.keys.Meta, len(vals))
	}
	fin, finOK := messageString(vals[0])
	total, totalOK := messageString(vals[1])
	if !totalOK {
		return Progress{}, fmt.Errorf("%w: meta %s is missing (the build's state is gone)", ErrCorrupt, b.schema.keys.Meta)
	}
	var p Progress
	if p.Total, err = strconv.ParseInt(total, 10, 64); err != nil {
		return Progress{}, fmt.Errorf("%w: meta total_units %q is not a count", ErrCorrupt, total)
	}
	if finOK {
		if p.Finalized, err = strconv.ParseInt(fin, 10, 64); err != nil {
			return Progress{}, fmt.Errorf("%w: meta finalized_count %q is not a count", ErrCorrupt, fin)
		}
	}
	if p.Finalized > p.Total {
		return p, fmt.Errorf("%w: %d units finalized of %d", ErrCorrupt, p.Finalized, p.Total)
	}
	return p, nil
}

// messageString reads a bulk string inside an array reply; nil reads as
// absent.
func messageString(m rueidis.RedisMessage) (string, bool) {
	s, err := m.ToString()
	return s, err == nil
}

// WorkerCount is how many workers have a record in the build: every worker
// that took part, those gone included. It sizes batches (see
// docs/design.md#batches). It writes nothing.
func (b *Build) WorkerCount(ctx context.Context) (int64, error) {
	ctx, cancel := boundedRead(ctx, readTimeout)
	defer cancel()
	n, err := b.client.Do(ctx, b.client.B().Hlen().Key(b.schema.keys.Workers).Build()).AsInt64()
	if err != nil {
		return 0, fmt.Errorf("queue: counting the workers of %s: %w", b.schema.keys.Workers, err)
	}
	return n, nil
}
