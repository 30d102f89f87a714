package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

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
//
// Entries read ahead for worker (opts.ReadAhead on its previous call, see
// read_ahead.go) come first, each accounted for as a read one is: they
// are pending under worker already.
func (b *Build) ReserveBatch(ctx context.Context, worker string, n int, opts ReserveOptions) (rs []Reservation, err error) {
	if err := checkID("worker id", worker); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errInvalid("batch of %d units: want at least 1", n)
	}
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	return b.core.reserveBatch(ctx, worker, n, opts)
}

// reserveBatch is ReserveBatch once its arguments are checked: what was
// read ahead for worker first, then a reclaim when one is due, then new
// entries.
func (e *core) reserveBatch(ctx context.Context, worker string, n int, opts ReserveOptions) (rs []Reservation, err error) {
	opts.ReadAhead = opts.ReadAhead && !e.eng.Inline() // the inline engine reads nothing ahead (engine.go)
	ahead := e.ahead.take(worker, opts)                // see read_ahead.go
	rest, lookOnly := ahead.stash, false
	defer func() {
		e.ahead.given(worker, n, opts, opts.ReadAhead, rs, rest, lookOnly)
		e.eng.Gave(worker, len(rs) > 0) // an idle worker's next read watches (engine.ReadWatching)
	}()
	timeoutMS := opts.Timeout.Milliseconds()
	look := ahead.look != nil || e.eng.Reclaims.Due(timeoutMS, time.Now()) // see machinery.ReclaimPace
	for len(rest) > 0 {
		// Delivered already, and heartbeated by nothing: they go before
		// a reclaim the look shows, which the next read-ahead's look,
		// alone, then brings.
		if rs, rest, err = e.accountStashed(ctx, worker, n, rest); err != nil || len(rs) > 0 {
			lookOnly = ahead.look == nil && look || ahead.look != nil && (ahead.look.anyCand || len(ahead.look.looked) > 0)
			return rs, err
		}
	}
	if look {
		rc, err := e.reclaimOn(ctx, worker, timeoutMS, float64(opts.MaxReclaims), ahead.look)
		if err != nil {
			return nil, corruptIfNoGroup(err)
		}
		if rc.Status == ReclaimTaken {
			return []Reservation{rc.Reservation}, nil
		}
	}
	return e.readNew(ctx, worker, n, opts, !look)
}

// accountStashed accounts for up to n entries read ahead for worker, of
// the stream of the first (priority entries come first), and returns
// those still held and the entries left. An entry reclaimed since it was
// read is left out, as in readNew; one whose accounting failed is dropped,
// pending under worker for a reclaim after the timeout.
func (e *core) accountStashed(ctx context.Context, worker string, n int, stash []stashed) (rs []Reservation, rest []stashed, err error) {
	k := 0
	for k < len(stash) && k < n && stash[k].s == stash[0].s {
		k++
	}
	for j, st := range stash[:k] {
		r, ok, err := e.account(ctx, worker, st.s, st.x)
		if err != nil {
			return rs, append(slices.Clone(stash[j+1:k]), stash[k:]...), err
		}
		if ok {
			rs = append(rs, r)
		}
	}
	return rs, stash[k:], nil
}

// readNew reads up to n new entries for worker, of the priority stream,
// else of the units stream (waiting up to opts.Block), and accounts for
// them. checkMeta: no first look read meta, so the priority read does, in
// the same round trip, and a build whose meta is gone is corrupt before
// any wait.
func (e *core) readNew(ctx context.Context, worker string, n int, opts ReserveOptions, checkMeta bool) ([]Reservation, error) {
	for _, s := range []Stream{StreamPriority, StreamUnits} {
		entries, err := e.readStream(ctx, worker, s, n, opts.Block, checkMeta && s == StreamPriority)
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var rs []Reservation
		for _, list := range entries {
			for _, x := range list {
				r, ok, err := e.account(ctx, worker, s, x)
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

// readStream reads up to n new entries of s for worker: the priority
// stream without waiting, the units stream waiting up to block (a
// blocking command: rueidis sends it on a connection of its own, so the
// wait holds up no other command). checkMeta: meta is read first, in the
// same round trip.
func (e *core) readStream(ctx context.Context, worker string, s Stream, n int, block time.Duration, checkMeta bool) (map[string][]rueidis.XRangeEntry, error) {
	bld := e.client.B()
	rctx, cancel := boundedRead(ctx, readBound(block))
	defer cancel()
	if s == StreamUnits && e.eng.WasIdle(worker) {
		// An idle worker calls Liveness next: its read makes Liveness's
		// reads too, behind a WATCH the engine keeps for it.
		livenessReads := func(c rueidis.DedicatedClient) rueidis.Commands { return e.schema.livenessReads(c, worker) }
		if reads, read, ok := e.eng.ReadWatching(rctx, worker, ModeLiveness, livenessReads, e.schema.readCommand(bld, worker, s, n, block)); ok {
			return e.schema.readReplies(worker, s, checkMeta, reads[0], read)
		}
	}
	read := e.schema.readCommand(bld, worker, s, n, block)
	if !checkMeta {
		// One command goes by Do: a cluster client's DoMulti retries
		// redirects through machinery that has panicked on a lone blocking
		// read during a failover (rueidis v1.0.79, cluster.go doresultfn).
		got := e.client.Do(rctx, read)
		return e.schema.readReplies(worker, s, false, got, got)
	}
	res := e.client.DoMulti(rctx, e.schema.metaReadOn(bld), read)
	return e.schema.readReplies(worker, s, true, res[0], res[1])
}

// readCommand is worker's XREADGROUP of up to n new entries of s, waiting
// up to block on the units stream. A command is built for each send:
// rueidis recycles a command once sent.
func (sc *schema) readCommand(bld rueidis.Builder, worker string, s Stream, n int, block time.Duration) rueidis.Completed {
	read := bld.Xreadgroup().Group(Group, worker).Count(int64(n))
	if s == StreamPriority {
		return read.Streams().Key(sc.keys.Priority).Id(">").Build()
	}
	return read.Block(block.Milliseconds()).Streams().Key(sc.keys.Units).Id(">").Build()
}

// readReplies are the entries of a stream read, given its reply and,
// when checkMeta, that of meta's state read before it.
func (sc *schema) readReplies(worker string, s Stream, checkMeta bool, meta, read rueidis.RedisResult) (map[string][]rueidis.XRangeEntry, error) {
	if checkMeta {
		found, err := sc.metaFound(meta)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("%w: meta is missing or holds no state (reservation by %q)", ErrCorrupt, worker)
		}
	}
	entries, err := read.AsXRead()
	if err != nil && !rueidis.IsRedisNil(err) {
		return nil, corruptIfNoGroup(fmt.Errorf("queue: XREADGROUP %s: %w", s, err))
	}
	return entries, err
}
