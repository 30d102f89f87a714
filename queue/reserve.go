package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Defaults of ReserveOptions.
const (
	// DefaultBlock is how long Reserve waits for a new unit.
	DefaultBlock = time.Second
	// DefaultMaxReclaims is how often a unit may be taken from a lost owner
	// when the build's meta does not say.
	DefaultMaxReclaims = 3
)

// ReserveOptions are a worker's own values for Reserve. The zero value means
// every default.
type ReserveOptions struct {
	// Timeout is how long an entry's owner may stay silent before this
	// worker reclaims it. Default DefaultTimeout.
	Timeout time.Duration
	// MaxReclaims is the reclaim budget used only when meta lacks one (the
	// publisher froze its own). Zero means DefaultMaxReclaims; a negative
	// value means none.
	MaxReclaims int
	// Block is how long to wait on the units stream when nothing is there.
	// Default DefaultBlock.
	Block time.Duration
	// ReadAhead: the worker will reserve again, with the same n, once it
	// has settled what this call gives. The settlement that leaves it
	// holding nothing then carries, behind its EXEC, the reads of its next
	// reservation (the reclaim's first look when due, then XREADGROUP of
	// one stream, COUNT n, without waiting), and the next ReserveBatch of
	// the worker starts from their replies instead of round trips of its
	// own. The entries those reads deliver are pending under the worker
	// at once: a worker that stops without reserving again (and did not call
	// StopReadAhead before its last settlement) leaves them to be
	// reclaimed by another worker after the timeout, each spending one of
	// its unit's reclaims; one that reserves fewer leaves the rest waiting,
	// heartbeated by nothing, until its next call. See
	// docs/design.md#read-ahead.
	ReadAhead bool
}

func (o ReserveOptions) withDefaults() (ReserveOptions, error) {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Timeout < time.Millisecond {
		return o, errInvalid("reclaim timeout %v is below one millisecond", o.Timeout)
	}
	switch {
	case o.MaxReclaims == 0:
		o.MaxReclaims = DefaultMaxReclaims
	case o.MaxReclaims < 0:
		o.MaxReclaims = 0
	}
	if o.Block == 0 {
		o.Block = DefaultBlock
	}
	if o.Block < time.Millisecond {
		return o, errInvalid("block %v is below one millisecond", o.Block)
	}
	return o, nil
}

// Reserve gives worker its next unit, if any:
//  1. Reclaim first: a unit whose owner has been silent for opts.Timeout is
//     taken over (or, past its reclaim budget, finalized as failed, which
//     gives nothing). A look that found nothing idle stays good for the
//     Build's reservations for an eighth of the timeout, at most a second
//     (see machinery.ReclaimPace).
//  2. Else a new entry of the priority stream (requeued units), without
//     waiting, then of the units stream, waiting up to opts.Block.
//  3. A new entry is accounted for (a delivered event). If someone reclaimed
//     it between the read and the accounting, the worker took nothing and
//     nothing is recorded.
//
// ok is false when there was nothing to take. An empty queue is not the end
// of the build: lost units come back through reclaims (see Progress).
// ErrCorrupt: meta, a unit's state or a consumer group (NOGROUP) is missing.
// When ctx ends between the read and the accounting, the entry stays
// pending under worker's name and is reclaimed after the timeout.
func (b *Build) Reserve(ctx context.Context, worker string, opts ReserveOptions) (r Reservation, ok bool, err error) {
	rs, err := b.ReserveBatch(ctx, worker, 1, opts)
	if err != nil || len(rs) == 0 {
		return Reservation{}, false, err
	}
	return rs[0], true, nil
}

// readBound is how long one read of Reserve may take: Block plus the margin
// of any read, held at the largest duration so that a Block near it still
// waits instead of wrapping to a deadline already past.
func readBound(block time.Duration) time.Duration {
	if block > math.MaxInt64-readTimeout {
		return math.MaxInt64
	}
	return block + readTimeout
}

// account turns a freshly read entry into a reservation.
func (e *core) account(ctx context.Context, worker string, s Stream, x rueidis.XRangeEntry) (Reservation, bool, error) {
	unit, ok := x.FieldValues["id"]
	if !ok {
		return Reservation{}, false, fmt.Errorf("%w: %s entry %s has no id field", ErrCorrupt, s, x.ID)
	}
	e.entries.learn(entryAt{s, x.ID}, unit)
	typ := x.FieldValues["type"]
	if typ == "" {
		typ = DefaultUnitType
	}
	d, err := e.accountDelivery(ctx, worker, s, x.ID, unit)
	if errors.Is(err, ErrStale) {
		return Reservation{}, false, nil
	}
	if err != nil {
		return Reservation{}, false, err
	}
	return Reservation{
		WorkerID: worker, Stream: s, EntryID: x.ID, UnitID: unit, UnitType: typ,
		DeliveryCount: d.DeliveryCount, RetryIndex: d.RetryIndex, ReclaimCount: d.ReclaimCount,
	}, true, nil
}

// corruptIfNoGroup reports a missing consumer group (or stream) as the
// build corruption it is: both are made by Publish and never deleted.
func corruptIfNoGroup(err error) error {
	var re *rueidis.RedisError
	if errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOGROUP") {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return err
}
