package queue

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

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
	vals, err := b.client.Do(ctx, b.client.B().Hmget().Key(b.keys.Meta).Field(metaFinalized, metaTotalUnits).Build()).ToArray()
	if err != nil {
		return Progress{}, fmt.Errorf("queue: reading progress of %s: %w", b.keys.Meta, err)
	}
	if len(vals) != 2 {
		return Progress{}, fmt.Errorf("queue: HMGET %s replied %d values, want 2", b.keys.Meta, len(vals))
	}
	fin, finOK := messageString(vals[0])
	total, totalOK := messageString(vals[1])
	if !totalOK {
		return Progress{}, fmt.Errorf("%w: meta %s is missing (the build's state is gone)", ErrCorrupt, b.keys.Meta)
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
