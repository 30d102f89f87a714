package queue

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

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
	v, err := c.Do(ctx, c.B().Hget().Key(b.keys.Meta).Field(metaRound).Build()).ToString()
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
	return b.readRoundCompletion(ctx, b.keys.OfRound(n))
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
