package queue

import (
	"context"
	"fmt"
)

// Look is a follower's look at a build as it now runs: its latest round
// (docs/design.md#rounds), that round's meta and workers, the tombstone,
// and the server's clock, against which the workers' stamps compare.
type Look struct {
	Round     int
	Meta      map[string]string // the round's, as stored; empty: no meta
	Workers   map[string]string // the round's, worker id to its record
	Tombstone bool
	NowMS     int64 // the server's time, epoch milliseconds
}

// ReadLook reads a Look: the build's meta, tombstone, workers and TIME in
// one round trip, and, when meta names a later round (MetaRound), that
// round's meta and workers in a second. A malformed round is corrupt. A
// round that meta names but whose meta is missing is corrupt too. Like
// ReadAttemptsAfter it takes ctx as given, and its batch is not retried
// (TIME is no read-only command): a look during an outage fails, and the
// follower looks again.
func (b *Build) ReadLook(ctx context.Context) (Look, error) {
	c := b.client
	res := c.DoMulti(ctx,
		c.B().Hgetall().Key(b.keys.Meta).Build(),
		c.B().Exists().Key(b.keys.Exists).Build(),
		c.B().Hgetall().Key(b.keys.Workers).Build(),
		c.B().Time().Build())
	l := Look{Round: 1}
	var err error
	if l.Meta, err = res[0].AsStrMap(); err != nil {
		return l, &ReadError{Read: "HGETALL meta", Err: err}
	}
	tomb, err := res[1].AsInt64()
	if err != nil {
		return l, &ReadError{Read: "EXISTS exists", Err: err}
	}
	l.Tombstone = tomb == 1
	if l.Workers, err = res[2].AsStrMap(); err != nil {
		return l, &ReadError{Read: "HGETALL workers", Err: err}
	}
	if l.NowMS, err = observedNow(res[3]); err != nil {
		return l, err
	}
	if l.Round, err = MetaRound(l.Meta); err != nil || l.Round == 1 {
		return l, err
	}
	return l, b.lookAtRound(ctx, &l)
}

// lookAtRound puts the meta and workers of round l.Round in l's.
func (b *Build) lookAtRound(ctx context.Context, l *Look) error {
	keys := b.keys.OfRound(l.Round)
	c := b.client
	res := c.DoMulti(ctx,
		c.B().Hgetall().Key(keys.Meta).Build(),
		c.B().Hgetall().Key(keys.Workers).Build())
	meta, err := res[0].AsStrMap()
	if err != nil {
		return &ReadError{Read: "HGETALL round meta", Err: err}
	}
	workers, err := res[1].AsStrMap()
	if err != nil {
		return &ReadError{Read: "HGETALL round workers", Err: err}
	}
	if len(meta) == 0 {
		return fmt.Errorf("%w: the build's meta names round %d, whose meta %s is missing", ErrCorrupt, l.Round, keys.Meta)
	}
	l.Meta, l.Workers = meta, workers
	return nil
}
