package queue

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// batchTrip is the shape of a batch's first round trip: WATCH of every
// guard, EXISTS meta, TIME when the clock is due, the tail's reads when it may requeue, then the
// reads of its ops (batchReads).
type batchTrip struct {
	gs     []guards // of each op
	watch  []string
	tail   bool
	time   bool // it carries a TIME: the Build's clock is due (machinery.Clock)
	shared int  // replies before the ops' reads
	reads  batchReads
}

func (e *engine) planTrip(ops []*fencedOp) batchTrip {
	tr := batchTrip{gs: make([]guards, len(ops)), watch: make([]string, 0, 2*len(ops)+1), shared: 2}
	if tr.time = e.clock.Due(); tr.time {
		tr.shared++
	}
	for i, op := range ops {
		tr.gs[i] = e.schema.guardsOf(op.r)
		tr.watch = append(tr.watch, tr.gs[i].worker)
		if entryGuards {
			tr.watch = append(tr.watch, tr.gs[i].entry)
		}
		tr.tail = tr.tail || op.tail
		if op.readsState() {
			tr.reads.units++
		}
	}
	tr.reads.known = e.entries.unitsOf(ops)
	for i, op := range ops {
		if tr.reads.ranges(i, op) {
			tr.reads.ranged++
		}
	}
	if tr.tail {
		// The tail guard orders requeues with every other requeue: they
		// pick priority ids from the same tail and read the same count of
		// units in retry. Nothing else writes it.
		tr.watch = append(tr.watch, e.schema.keys.tailGuard())
		tr.shared += tailReadCount
	}
	return tr
}

// appendTripCommands appends to cmds the first round trip of ops, shaped
// as tr.
func (e *engine) appendTripCommands(cmds rueidis.Commands, c rueidis.DedicatedClient, ops []*fencedOp, tr batchTrip) rueidis.Commands {
	cmds = append(cmds, c.B().Watch().Key(tr.watch...).Build(), e.schema.metaRead(c))
	if tr.time {
		cmds = append(cmds, c.B().Time().Build())
	}
	if tr.tail {
		cmds = append(cmds, tailReads(e, c)...)
	}
	return e.appendBatchReads(cmds, c, ops, tr.reads)
}

// tripNow is the server's time for the decisions of a batch whose first
// round trip, shaped as shape and arrived at mono time arrived, replied
// res: the TIME it carried anchors the clock first.
func (e *engine) tripNow(ctx context.Context, c rueidis.DedicatedClient, shape batchTrip, res []rueidis.RedisResult, arrived time.Duration) (int64, error) {
	if shape.time {
		return e.clock.AnchoredNow(ctx, c, res[2], arrived)
	}
	return e.clock.ServerNow(ctx, c)
}
