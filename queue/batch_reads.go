package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// batchTrip is the shape of a batch's first round trip: WATCH of every
// guard (each op's, and the tail's when it may requeue), EXISTS meta, TIME
// when the clock is due, the tail's reads when it may requeue, then the
// reads of its ops (batchReads).
type batchTrip struct {
	gs     []guards // of each op
	tail   bool
	time   bool // it carries a TIME: the engine's clock is due (machinery.Clock)
	shared int  // replies before the ops' reads
	reads  batchReads
}

// loneTrip holds the per-op parts of a lone transition's trip in one
// allocation: most transitions run alone.
type loneTrip struct {
	gs    [1]guards
	known [1]string
}

// Trip plans the first round trip of ops (engine.Domain).
func (e *core) Trip(ops []*fencedOp) batchTrip {
	tr := batchTrip{shared: 2}
	if len(ops) == 1 {
		lone := new(loneTrip)
		tr.gs, tr.reads.known = lone.gs[:], lone.known[:]
	} else {
		tr.gs, tr.reads.known = make([]guards, len(ops)), make([]string, len(ops))
	}
	if tr.time = e.eng.Clock.Due(); tr.time {
		tr.shared++
	}
	for i, op := range ops {
		tr.gs[i] = e.schema.guardsOf(op.Subject)
		tr.tail = tr.tail || op.Claim.Tail
		if readsState(op) {
			tr.reads.units++
		}
	}
	e.entries.unitsOf(ops, tr.reads.known)
	for i, op := range ops {
		if tr.reads.ranges(i, op) {
			tr.reads.ranged++
		}
	}
	if tr.tail {
		tr.shared += tailReadCount
	}
	return tr
}

// SameTrip tells whether a kept trip has the shape own would have, its
// TIME aside: the kept one's replies are read by its own shape
// (engine.Domain).
func (e *core) SameTrip(kept, own batchTrip) bool {
	kr, or := kept.reads, own.reads
	return kept.tail == own.tail && kr.units == or.units && kr.ranged == or.ranged && slices.Equal(kr.known, or.known) && slices.Equal(kept.gs, own.gs)
}

// watchCommand is the trip's WATCH: every op's guards, then, when it may
// requeue, the tail guard. The tail guard orders requeues with every other
// requeue: they pick priority ids from the same tail and read the same
// count of units in retry. Nothing else writes it.
func (e *core) watchCommand(c rueidis.DedicatedClient, tr batchTrip) rueidis.Completed {
	w := c.B().Watch().Key(tr.gs[0].worker)
	if entryGuards {
		w = w.Key(tr.gs[0].entry)
	}
	for _, g := range tr.gs[1:] {
		if w = w.Key(g.worker); entryGuards {
			w = w.Key(g.entry)
		}
	}
	if tr.tail {
		w = w.Key(e.schema.keys.tailGuard())
	}
	return w.Build()
}

// AppendTrip appends to cmds the first round trip of ops, shaped as tr
// (engine.Domain); cmds nil: to a list of the room it takes.
func (e *core) AppendTrip(cmds rueidis.Commands, c rueidis.DedicatedClient, ops []*fencedOp, tr batchTrip) rueidis.Commands {
	if cmds == nil {
		cmds = make(rueidis.Commands, 0, tr.shared+2+len(ops))
	}
	cmds = append(cmds, e.watchCommand(c, tr), e.schema.metaRead(c))
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
func (e *core) tripNow(ctx context.Context, c rueidis.DedicatedClient, shape batchTrip, res []rueidis.RedisResult, arrived time.Duration) (int64, error) {
	if shape.time {
		return e.eng.Clock.AnchoredNow(ctx, c, res[2], arrived)
	}
	return e.eng.Clock.ServerNow(ctx, c)
}

// guards are the guard keys of one reservation: its worker's and its
// entry's, named once per transition.
type guards struct{ worker, entry string }

func (sc *schema) guardsOf(r Reservation) guards {
	return guards{worker: sc.workerGuard(r.WorkerID), entry: sc.keys.entryGuard(r.Stream, r.EntryID)}
}

// held is what a fenced transition reads, in one round trip, right after it
// WATCHes the guards of the entry and of the worker (see core.Decide).
type held struct {
	metaExists bool
	row        fence.Row
	pending    bool
	state      budget.State
	hasState   bool
	worker     workerRecord
	now        int64
	// entry is the entry's own fields as far as the transition needs them:
	// its id field, which must name the caller's unit (see entryUnitCheck).
	// Zero: not read (the heartbeat), or the entry is gone from the stream.
	entry entryFields
	// stateErr and workerErr are why the unit's state or the worker's
	// record could not be decoded. They are reported after the fence
	// check and the state's presence (see held.settled,
	// docs/design.md#transitions): a stale reservation is told so
	// whatever the records hold.
	stateErr, workerErr error
}

// batchReads are the reads of a batch's transitions after those they share
// (meta, the time, the tail): one HMGET of the workers' records, one HMGET
// of the units' states for the transitions that decide on theirs (all but
// the heartbeat, which decides on the pending row alone), then each
// transition's pending row. One HMGET for
// many fields costs the server less than as many HGETs. Last, an XRANGE
// of each entry whose unit the Build does not remember (see
// entryUnitCheck), in the same round trip.
type batchReads struct {
	units int // fields of the states' HMGET; 0: not sent
	// known holds, per op, the unit its entry carries as the Build
	// remembers it; "" where the entry is ranged, or not checked.
	known  []string
	ranged int // XRANGEs sent
}

// appendBatchReads appends the reads of ops, in the order replies takes
// them (batchTrip.reads counts the units' states among them).
func (e *core) appendBatchReads(cmds rueidis.Commands, c rueidis.DedicatedClient, ops []*fencedOp, br batchReads) rueidis.Commands {
	k := e.schema.keys
	var wbuf, ubuf [4]string // a batch of a few needs no allocation
	workers, units := wbuf[:0], ubuf[:0]
	for _, op := range ops {
		workers = append(workers, op.Subject.WorkerID)
		if readsState(op) {
			units = append(units, op.Subject.UnitID)
		}
	}
	cmds = append(cmds, c.B().Hmget().Key(k.Workers).Field(workers...).Build())
	if len(units) > 0 {
		cmds = append(cmds, c.B().Hmget().Key(k.UnitState).Field(units...).Build())
	}
	for _, op := range ops {
		cmds = append(cmds, c.B().Xpending().Key(k.stream(op.Subject.Stream)).Group(Group).Start(op.Subject.EntryID).End(op.Subject.EntryID).Count(1).Build())
	}
	for i, op := range ops {
		if br.ranges(i, op) {
			cmds = append(cmds, c.B().Xrange().Key(k.stream(op.Subject.Stream)).Start(op.Subject.EntryID).End(op.Subject.EntryID).Build())
		}
	}
	return cmds
}

// ranges tells whether the reads of op, the i-th of the batch, range its
// entry: it decides on its unit's state, and the Build does not remember
// which unit the entry carries.
func (br batchReads) ranges(i int, op *fencedOp) bool {
	return readsState(op) && br.known[i] == ""
}

// count is how many replies the reads of ops take.
func (br batchReads) count(ops int) int {
	if br.units > 0 {
		return 2 + ops + br.ranged
	}
	return 1 + ops + br.ranged
}

// batchReplies are the replies of a batch's reads, split.
type batchReplies struct {
	workers, states []rueidis.RedisMessage
	werr, serr      error
	pending         []rueidis.RedisResult
	entries         []rueidis.RedisResult // the XRANGEs
	known           []string              // batchReads.known
	unit            int                   // the next state to take
	entry           int                   // the next XRANGE to take
}

// replies splits res, the replies of the reads of ops.
func (br batchReads) replies(ops int, res []rueidis.RedisResult) batchReplies {
	var r batchReplies
	r.workers, r.werr = fieldValues(res[0], ops, "HMGET workers")
	if br.units > 0 {
		r.states, r.serr = fieldValues(res[1], br.units, "HMGET unit_state")
	}
	first := br.count(ops) - ops - br.ranged
	r.pending = res[first : first+ops]
	r.entries, r.known = res[first+ops:], br.known
	return r
}

// held fills in h, which holds what the batch shares, with what op, the
// i-th of the batch, read; ops must be taken in order. An error is op's
// alone as far as the replies allow: a failed HMGET fails every op that
// needs it.
func (r *batchReplies) held(k Keys, i int, op *fencedOp, h *held) error {
	var state *rueidis.RedisMessage
	var ranged *rueidis.RedisResult
	if readsState(op) {
		if r.serr == nil {
			state = &r.states[r.unit]
		}
		r.unit++
		if r.known[i] != "" {
			h.entry = entryFields{exists: true, hasID: true, id: r.known[i]}
		} else {
			ranged = &r.entries[r.entry]
			r.entry++
		}
	}
	switch {
	case !h.metaExists:
		return nil // the decision is CORRUPT, whatever the rest says
	case r.werr != nil:
		return r.werr
	case readsState(op) && r.serr != nil:
		return r.serr
	}
	if ranged != nil {
		if err := ranged.Error(); err != nil {
			return fmt.Errorf("queue: XRANGE %s %s: %w", k.stream(op.Subject.Stream), op.Subject.EntryID, err)
		}
		h.entry = parseEntry(*ranged)
	}
	return h.parseEntry(k, op.Subject, r.pending[i], state, r.workers[i])
}

// parseEntry fills in what a fenced transition reads of one reservation:
// the entry's pending row, the unit's state when it was read (state not
// nil), and the worker's record.
func (h *held) parseEntry(k Keys, r Reservation, pending rueidis.RedisResult, state *rueidis.RedisMessage, worker rueidis.RedisMessage) error {
	var err error
	if h.row, h.pending, err = pendingRow(pending); err != nil {
		return fmt.Errorf("queue: XPENDING %s %s: %w", k.stream(r.Stream), r.EntryID, err)
	}
	if state != nil {
		raw, found, err := optionalField(*state)
		if err != nil {
			return err
		}
		if found {
			if h.state, err = budget.DecodeState(raw); err != nil {
				h.stateErr = err
				return nil
			}
			h.hasState = true
		}
	}
	raw, found, err := optionalField(worker)
	if err != nil {
		return err
	}
	h.worker, h.workerErr = parseWorkerRecord(raw, found)
	return nil
}
