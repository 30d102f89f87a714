package queue

import (
	"slices"

	"github.com/redis/rueidis"
)

// A batch's first round trip (WATCH, then its reads) needs nothing from the
// batch before it, only a connection with no WATCH armed, and a connection
// has none once its EXEC has run. So when a batch commits while others wait
// for a lane, it sends the first round trip of the next one behind its own
// EXEC, in the same write, and hands that connection, now watching the next
// batch's guards, to the next batch's leader, with the replies of its reads.
// That batch then needs one round trip of its own, its commit, and may in
// turn carry the one after it. Under load, when every lane is busy and
// transitions queue, a batch costs one round trip instead of two: one write
// and one read of the socket less for both client and server.
//
// Nothing about correctness changes: the next batch's WATCH and reads run
// after the EXEC before them, on the connection they would otherwise have
// had alone, and everything it decides is still checked by its EXEC
// against its own guards. The two batches never share a worker, a unit or
// an entry (the waiting batch is chosen as any other would be, among the
// transitions with nothing in flight), so their order does not matter.
// When the commit before it aborts, the next batch keeps its reads and
// commits on its own, and the aborted one tries again on another
// connection. When the connection fails on the way, the next batch has
// lost nothing but its reads, and starts over.

// prefetch is a batch's first round trip, sent behind another batch's EXEC.
type prefetch struct {
	batch []*fencedOp
	trip  batchTrip
	cmds  rueidis.Commands // the first round trip, to send; rueidis recycles them once sent
	// c and release are the connection it went on, handed over with the
	// replies when they all arrived; replies nil: lost, start over.
	c       rueidis.DedicatedClient
	release func()
	replies []rueidis.RedisResult
	// kept: read before its transition was called (see kept_reads.go), so
	// it may back a commit but never a refusal.
	kept bool
}

// arrived takes the replies of the first round trip, sent on c, which
// release gives back. It reports whether p now holds c: the replies all
// came back. A reply lost with the connection leaves p empty and c with its
// owner, who gives it back broken, as it would have without p.
func (p *prefetch) arrived(c rueidis.DedicatedClient, release func(), res []rueidis.RedisResult) bool {
	for _, r := range res {
		if r.NonRedisError() != nil {
			return false
		}
	}
	p.c, p.release, p.replies = c, release, res
	return true
}

// drop gives back, disarmed, a connection p holds that will not be used.
func (p *prefetch) drop() {
	if p != nil && p.replies != nil {
		unwatch(p.c)
		p.release()
		p.replies = nil
	}
}

// follower returns what commitBatch calls right before it sends a commit on
// c: the batch to carry behind it, opened and taken off the queue, with
// its first round trip built on c; nil when no waiting transition can lead
// a batch now. It may open one lane over maxLanes: the batch it carries
// takes over the lane of the one committing, which gives it back as soon
// as its EXEC's reply is in.
func (q *batcher) follower(b *Build) func(c rueidis.DedicatedClient) *prefetch {
	return func(c rueidis.DedicatedClient) *prefetch {
		q.mu.Lock()
		i := -1
		if q.lanes <= maxLanes {
			i = q.nextLeader(true)
		}
		if i < 0 {
			q.mu.Unlock()
			return nil
		}
		first := q.pending[i]
		q.pending = slices.Delete(q.pending, i, i+1)
		batch := q.open(first)
		q.mu.Unlock()
		trip := b.planTrip(batch)
		return &prefetch{batch: batch, trip: trip, cmds: b.appendTripCommands(nil, c, batch, trip)}
	}
}

// tripOr is the shape of the first round trip p made for ops, or, p nil,
// of the one they are to make.
func (p *prefetch) tripOr(b *Build, ops []*fencedOp) batchTrip {
	if p != nil {
		return p.trip
	}
	return b.planTrip(ops)
}

// link ties a commit to the batches before and after it on one connection.
type link struct {
	// from is the commit's first round trip, already made behind the EXEC
	// of the batch before; nil: none.
	from *prefetch
	// next returns the batch to carry behind the commit's EXEC; nil: none.
	next func(c rueidis.DedicatedClient) *prefetch
	// ahead is the reads to carry behind the commit's EXEC, before next's,
	// for the workers it leaves holding nothing (read_ahead.go); nil: none.
	ahead *aheadTrip
}
