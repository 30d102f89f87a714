package queue

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
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
		c.B().Hgetall().Key(b.schema.keys.Meta).Build(),
		c.B().Exists().Key(b.schema.keys.Exists).Build(),
		c.B().Hgetall().Key(b.schema.keys.Workers).Build(),
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
	keys := b.schema.keys.OfRound(l.Round)
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

// Completion is what a follower of the attempt log (hopper events
// --follow) reads each look to know whether to go on: the build's latest
// round, that round's state and counts, and the tombstone.
type Completion struct {
	Round int
	// Published is false when the round's meta has no state: not
	// published yet, or gone (see Tombstone). State is that state.
	Published        bool
	State            string
	Finalized, Total int64
	Tombstone        bool
}

// ReadCompletion reads a Completion: the round meta names (MetaRound: a
// malformed one is corrupt), then that round's counts and the tombstone
// in one round trip. A ready round's counts are the publisher's and the
// finalizers' whole numbers: one that is missing or not a count is a
// *MetaError naming it, as such a round could never be read as complete.
// ctx is taken as given (see ReadAttemptsAfter).
func (b *Build) ReadCompletion(ctx context.Context) (Completion, error) {
	c := b.client
	v, err := c.Do(ctx, c.B().Hget().Key(b.schema.keys.Meta).Field(metaRound).Build()).ToString()
	round := map[string]string{}
	if err == nil {
		round[metaRound] = v
	} else if !rueidis.IsRedisNil(err) {
		return Completion{}, &ReadError{Read: "HGET meta round", Err: err}
	}
	n, err := MetaRound(round)
	if err != nil {
		return Completion{}, err
	}
	return b.readRoundCompletion(ctx, b.schema.keys.OfRound(n))
}

// readRoundCompletion reads the state and counts of the round whose keys
// are keys, and the tombstone.
func (b *Build) readRoundCompletion(ctx context.Context, keys Keys) (Completion, error) {
	c := b.client
	res := c.DoMulti(ctx,
		c.B().Hmget().Key(keys.Meta).Field(metaFinalized, metaTotalUnits, metaState).Build(),
		c.B().Exists().Key(keys.Exists).Build())
	vals, err := res[0].ToArray()
	if err != nil {
		return Completion{}, &ReadError{Read: "HMGET meta", Err: err}
	}
	tomb, err := res[1].AsInt64()
	if err != nil {
		return Completion{}, &ReadError{Read: "EXISTS exists", Err: err}
	}
	if len(vals) != 3 {
		return Completion{}, &ReadError{Read: "HMGET meta", Err: fmt.Errorf("replied %d values, want 3", len(vals))}
	}
	cp := Completion{Round: keys.Round(), Tombstone: tomb == 1}
	cp.State, cp.Published = messageString(vals[2])
	if !cp.Published || cp.State != stateReady {
		return cp, nil
	}
	total, ok := messageString(vals[1])
	if cp.Total, err = strconv.ParseInt(total, 10, 64); err != nil || !ok {
		return cp, metaErrorf("meta %s is ready but its total_units %q is not a count", keys.Meta, total)
	}
	if fin, ok := messageString(vals[0]); ok {
		if cp.Finalized, err = strconv.ParseInt(fin, 10, 64); err != nil {
			return cp, metaErrorf("meta %s is ready but its finalized_count %q is not a count", keys.Meta, fin)
		}
	}
	return cp, nil
}
