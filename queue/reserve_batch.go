package queue

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
)

// ReserveBatch gives worker up to n units in one read, as Reserve gives
// one: a unit reclaimed from a silent owner comes alone; else up to n new
// entries of the priority stream, or, when it has none, of the units stream
// (waiting up to opts.Block). Each entry is accounted for on its own (a
// delivered event each) and gets its own Reservation, fenced apart from the
// others: settling, heartbeating or losing one touches no other. An entry
// reclaimed between the read and its accounting is left out. The result is
// empty when there was nothing to take.
//
// On an error after some entries were accounted for, those are returned
// with it: they are pending under worker's name, and reclaimed after the
// timeout when the worker does not run them. See docs/design.md#batches.
func (b *Build) ReserveBatch(ctx context.Context, worker string, n int, opts ReserveOptions) ([]Reservation, error) {
	if err := checkID("worker id", worker); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errInvalid("batch of %d units: want at least 1", n)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	rc, err := b.Reclaim(ctx, worker, opts.Timeout, opts.MaxReclaims)
	if err != nil {
		return nil, corruptIfNoGroup(err)
	}
	if rc.Status == ReclaimTaken {
		return []Reservation{rc.Reservation}, nil
	}
	for _, s := range []Stream{StreamPriority, StreamUnits} {
		read := b.client.B().Xreadgroup().Group(Group, worker).Count(int64(n))
		var cmd rueidis.Completed
		if s == StreamPriority {
			cmd = read.Streams().Key(b.keys.Priority).Id(">").Build()
		} else {
			// A blocking command: rueidis sends it on a connection of its
			// own, so the wait holds up no other command.
			cmd = read.Block(opts.Block.Milliseconds()).Streams().Key(b.keys.Units).Id(">").Build()
		}
		rctx, cancel := boundedRead(ctx, readBound(opts.Block))
		entries, err := b.client.Do(rctx, cmd).AsXRead()
		cancel()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return nil, corruptIfNoGroup(fmt.Errorf("queue: XREADGROUP %s: %w", s, err))
		}
		var rs []Reservation
		for _, list := range entries {
			for _, x := range list {
				r, ok, err := b.account(ctx, worker, s, x)
				if err != nil {
					return rs, err
				}
				if ok {
					rs = append(rs, r)
				}
			}
		}
		if len(rs) > 0 {
			return rs, nil
		}
	}
	return nil, nil
}
