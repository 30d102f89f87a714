package queue

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// The fenced transitions of one reservation (delivery accounting,
// heartbeat, finalize, requeue, abandoned) each cost two round trips and a
// transaction of their own. Those of one Build that arrive while another is
// committing wait, and then commit together, in one transaction, in the
// order they arrived: the guards of all of them watched, all their reads in
// one round trip, every decision taken on those reads as if each transition
// ran alone in turn, and all their writes in one MULTI ... EXEC, with the
// build's TTLs renewed once. Each transition keeps its own outcome. The more
// workers of one process transact at once, the fewer round trips and
// commands each costs; and a Build never races itself, on the priority
// tail or anywhere else. Transitions of other processes race through the
// guards as before, which alone keep every one of them correct.

// maxBatch bounds the transitions of one transaction: its reads and writes
// grow with each, and so does the cost of an abort.
const maxBatch = 32

// maxLanes is how many batches of one Build may be in flight at once. One
// alone would make every transition wait for the batch ahead of it, two
// round trips, even when Redis and the network have room for more; with a
// few, transitions run alone, as they would unbatched, until more arrive at
// once than there are lanes, and only then share transactions.
const maxLanes = 4

// fencedOp is one fenced transition waiting for, or taken into, a batch.
type fencedOp struct {
	mode string
	r    Reservation
	// tail: the op may put its unit back on the priority stream, so the
	// batch watches the tail guard and reads the budgets (see requeue.go).
	// Only one batch in flight holds such ops, so that a Build's requeues
	// never race each other on the tail.
	tail bool
	// decide checks what was read for r (g: r's guards) and returns r's writes (the TTL
	// renewal left out), or the refusal that is r's outcome. It runs once
	// per attempt of the batch, and sets the caller's outputs.
	decide func(c rueidis.DedicatedClient, h held, g guards, t *tailState, token string) (rueidis.Commands, error)

	ctx  context.Context
	err  error
	wake chan wakeup
}

// wakeup tells a waiting op what became of it: it leads batch, whose first
// round trip from may already have made (see chain.go); or, batch nil, its
// batch committed and err is set.
type wakeup struct {
	batch []*fencedOp
	from  *prefetch
}

// batcher queues a Build's fenced transitions behind its batches in flight.
type batcher struct {
	mu       sync.Mutex
	pending  []*fencedOp
	lanes    int  // batches in flight
	tailBusy bool // one of them holds ops with tail set
	// busy counts the workers, units and entries of the ops in flight: an
	// op waits while one of its own is in flight, so that a worker's
	// transitions commit in the order they were called and batches of one
	// Build never abort each other.
	busy map[opKey]int
}

// readsState tells whether op decides on its unit's state: every fenced
// transition but the heartbeat.
func (o *fencedOp) readsState() bool { return o.mode != ModeHeartbeat }

// opKey is one thing an op decides on and writes: its worker, its unit or
// its entry. Kept apart by kind, compared without building a string.
type opKey struct {
	kind     byte // 'w', 'u' or 'e'
	id       string
	streamOf Stream // the entry's stream
}

// keys names what op decides on and writes, for the overlap checks.
func (o *fencedOp) keys() [3]opKey {
	return [3]opKey{{kind: 'w', id: o.r.WorkerID}, {kind: 'u', id: o.r.UnitID}, {kind: 'e', id: o.r.EntryID, streamOf: o.r.Stream}}
}

// inFlight tells whether one of op's worker, unit or entry is in a batch in
// flight. q.mu is held.
func (q *batcher) inFlight(op *fencedOp) bool {
	for _, k := range op.keys() {
		if q.busy[k] > 0 {
			return true
		}
	}
	return false
}

// waiting tells whether an op of op's worker, unit or entry is waiting:
// op goes behind it. q.mu is held.
func (q *batcher) waiting(op *fencedOp) bool {
	mine := op.keys()
	for _, o := range q.pending {
		for _, k := range o.keys() {
			if slices.Contains(mine[:], k) {
				return true
			}
		}
	}
	return false
}

// touches tells whether op touches one of keys.
func touches(keys map[opKey]bool, op *fencedOp) bool {
	for _, k := range op.keys() {
		if keys[k] {
			return true
		}
	}
	return false
}

// nextLeader is the index of the first waiting op that may lead a batch
// now and is not behind a waiting op of its own worker, unit or entry; -1:
// none. anyLane: whether or not a lane is free. q.mu is held.
func (q *batcher) nextLeader(anyLane bool) int {
	behind := map[opKey]bool{}
	for i, o := range q.pending {
		if (anyLane || q.lanes < maxLanes) && q.mayLead(o) && !touches(behind, o) {
			return i
		}
		for _, k := range o.keys() {
			behind[k] = true
		}
	}
	return -1
}

// mark counts batch in flight (n 1) or done (n -1). q.mu is held.
func (q *batcher) mark(batch []*fencedOp, n int) {
	if q.busy == nil {
		q.busy = map[opKey]int{}
	}
	for _, o := range batch {
		for _, k := range o.keys() {
			if q.busy[k] += n; q.busy[k] == 0 {
				delete(q.busy, k)
			}
		}
	}
}

// do runs op: at once when a lane is free, else in a later batch. A caller
// whose ctx ends while it waits leaves the queue with ctx's error; once
// taken into a batch, its transition runs with the batch, which stops
// retrying only when every caller in it has given up (see batchContext).
func (q *batcher) do(ctx context.Context, b *Build, op *fencedOp) error {
	op.ctx = ctx
	kept := b.kept.take(b, op)
	q.mu.Lock()
	if q.free(op) && !q.waiting(op) {
		batch := q.open(op)
		q.mu.Unlock()
		if kept != nil && len(batch) > 1 { // read for op alone
			go kept.drop()
			kept = nil
		}
		q.run(b, batch, kept)
		return op.err
	}
	if kept != nil {
		go kept.drop()
	}
	op.wake = make(chan wakeup, 1)
	q.pending = append(q.pending, op)
	q.mu.Unlock()
	var w wakeup
	select {
	case w = <-op.wake:
	case <-ctx.Done():
		q.mu.Lock()
		if i := slices.Index(q.pending, op); i >= 0 {
			q.pending = slices.Delete(q.pending, i, i+1)
			q.mu.Unlock()
			return ctx.Err()
		}
		q.mu.Unlock()
		w = <-op.wake // already taken
	}
	if w.batch != nil {
		q.run(b, w.batch, w.from)
	}
	return op.err
}

// free tells whether op may lead a batch now. q.mu is held.
func (q *batcher) free(op *fencedOp) bool {
	return q.lanes < maxLanes && q.mayLead(op)
}

// mayLead tells whether op may lead a batch now, a lane aside: nothing of
// its own in flight, and no other batch in flight holding requeues when it
// may requeue. q.mu is held.
func (q *batcher) mayLead(op *fencedOp) bool {
	return (!op.tail || !q.tailBusy) && !q.inFlight(op)
}

// open gives first a lane and its batch: first, then the waiting
// transitions that can share its transaction, in order. q.mu is held.
func (q *batcher) open(first *fencedOp) []*fencedOp {
	q.lanes++
	batch := []*fencedOp{first}
	tail := first.tail
	overlaps := func(o *fencedOp) bool {
		for _, in := range batch {
			// Each op is decided on what was read before any of them
			// wrote: no two of one worker, unit or entry.
			if in.r.WorkerID == o.r.WorkerID || in.r.UnitID == o.r.UnitID ||
				in.r.Stream == o.r.Stream && in.r.EntryID == o.r.EntryID {
				return true
			}
		}
		return false
	}
	left := q.pending[:0]
	behind := map[opKey]bool{} // what the ops left waiting touch: those behind them wait too
	for _, o := range q.pending {
		switch {
		case len(batch) >= maxBatch, overlaps(o), q.inFlight(o), o.tail && !tail && q.tailBusy, touches(behind, o):
			left = append(left, o)
			for _, k := range o.keys() {
				behind[k] = true
			}
		default:
			batch = append(batch, o)
			tail = tail || o.tail
		}
	}
	clear(q.pending[len(left):])
	q.pending = left
	q.tailBusy = q.tailBusy || tail
	q.mark(batch, 1)
	return batch
}

// run commits batch, which holds a lane, tells its members their outcomes,
// gives the lane back, and opens a batch for each waiting transition there
// is now room for. from is the batch's first round trip when the batch
// before it carried it (see chain.go).
func (q *batcher) run(b *Build, batch []*fencedOp, from *prefetch) {
	ctx, cancel := batchContext(batch)
	next, keep := b.kept.arm(b, batch, q.follower(b))
	b.commitBatch(ctx, batch, link{from: from, next: next, ahead: b.ahead.carry(b, batch)})
	keep()
	cancel()
	for _, o := range batch[1:] {
		o.wake <- wakeup{}
	}
	tail := false
	for _, o := range batch {
		tail = tail || o.tail
	}

	q.mu.Lock()
	q.lanes--
	q.mark(batch, -1)
	if tail {
		q.tailBusy = false
	}
	var leaders [][]*fencedOp
	for q.lanes < maxLanes {
		i := q.nextLeader(false)
		if i < 0 {
			break
		}
		first := q.pending[i]
		q.pending = slices.Delete(q.pending, i, i+1)
		leaders = append(leaders, q.open(first))
	}
	q.mu.Unlock()
	for _, next := range leaders {
		next[0].wake <- wakeup{batch: next}
	}
}

// commitBatch commits ops (distinct workers, entries and units) in one
// transaction. An op refused on what it read (stale, corrupt) gets its
// refusal and writes nothing; the others go on. An error of the commit
// itself is that of every op that had something to write. l links the
// commit to the batches before and after it (see chain.go).
func (b *Build) commitBatch(ctx context.Context, ops []*fencedOp, l link) {
	k := b.keys
	trip := l.from.tripOr(b, ops)
	shared, gs := trip.shared, trip.gs
	kept := l.from != nil && l.from.kept
	err := b.commitLinked(ctx, ops[0].mode, gs[0].worker, l, func(ctx context.Context, c rueidis.DedicatedClient, t *txn) (rueidis.Commands, error) {
		res := t.first
		if res == nil {
			res = c.DoMulti(ctx, b.appendTripCommands(make(rueidis.Commands, 0, shared+2+len(ops)), c, ops, trip)...)
		}
		if err := res[0].Error(); err != nil {
			return nil, err
		}
		var common held
		var err error
		if common.metaExists, err = b.metaFound(res[1]); err != nil {
			if t.first != nil && kept {
				return nil, errRetry // never refuse on reads made before the call
			}
			return nil, err
		}
		if common.metaExists {
			if common.now, err = b.tripNow(ctx, c, trip, res); err != nil {
				return nil, err
			}
			t.now = common.now
		}
		var ts *tailState
		if trip.tail {
			if ts, err = readTail(res[shared-tailReadCount : shared]); err != nil {
				return nil, err
			}
		}
		var writes rueidis.Commands
		replies := trip.reads.replies(len(ops), res[shared:shared+trip.reads.count(len(ops))])
		for i, op := range ops {
			h := common
			if op.err = replies.held(k, i, op, &h); op.err != nil {
				continue
			}
			b.entries.learnChecked(trip.reads, i, op, h)
			w, err := op.decide(c, h, gs[i], ts, t.token)
			if err != nil {
				op.err = err
				continue
			}
			if i > 0 {
				// The runner records the token on the first op's worker
				// guard; every other worker whose record changes gets it too.
				writes = b.appendTokenRecord(writes, c, t, gs[i].worker)
			}
			writes = append(writes, w...)
		}
		if t.first != nil && kept && refused(ops) {
			return nil, errRetry // never refuse on reads made before the call
		}
		if len(writes) == 0 {
			return nil, nil // every op was refused: nothing to commit
		}
		if len(ops) > 1 {
			writes = mergeWrites(c, writes)
		}
		return b.renew(c, writes), nil
	})
	for _, op := range ops {
		if err != nil && op.err == nil {
			// An op refused on what it read keeps its refusal: it had
			// nothing to commit. The others share the commit's fate.
			op.err = err
		}
	}
}

// batchTrip is the shape of a batch's first round trip: WATCH of every
// guard, EXISTS meta, TIME when the clock is due, the tail's reads when it may requeue, then the
// reads of its ops (batchReads).
type batchTrip struct {
	gs     []guards // of each op
	watch  []string
	tail   bool
	time   bool // it carries a TIME: the Build's clock is due (clock.go)
	shared int  // replies before the ops' reads
	reads  batchReads
}

func (b *Build) planTrip(ops []*fencedOp) batchTrip {
	tr := batchTrip{gs: make([]guards, len(ops)), watch: make([]string, 0, 2*len(ops)+1), shared: 2}
	if tr.time = b.clock.due(); tr.time {
		tr.shared++
	}
	for i, op := range ops {
		tr.gs[i] = b.guardsOf(op.r)
		tr.watch = append(tr.watch, tr.gs[i].worker)
		if entryGuards {
			tr.watch = append(tr.watch, tr.gs[i].entry)
		}
		tr.tail = tr.tail || op.tail
		if op.readsState() {
			tr.reads.units++
		}
	}
	tr.reads.known = b.entries.unitsOf(ops)
	for i, op := range ops {
		if tr.reads.ranges(i, op) {
			tr.reads.ranged++
		}
	}
	if tr.tail {
		// The tail guard orders requeues with every other requeue: they
		// pick priority ids from the same tail and read the same count of
		// units in retry. Nothing else writes it.
		tr.watch = append(tr.watch, b.keys.tailGuard())
		tr.shared += tailReadCount
	}
	return tr
}

// appendTripCommands appends to cmds the first round trip of ops, shaped
// as tr.
func (b *Build) appendTripCommands(cmds rueidis.Commands, c rueidis.DedicatedClient, ops []*fencedOp, tr batchTrip) rueidis.Commands {
	cmds = append(cmds, c.B().Watch().Key(tr.watch...).Build(), b.metaRead(c))
	if tr.time {
		cmds = append(cmds, c.B().Time().Build())
	}
	if tr.tail {
		cmds = append(cmds, tailReads(b, c)...)
	}
	return b.appendBatchReads(cmds, c, ops, tr.reads)
}

// fenced runs one fenced transition of r through the Build's batches.
func (b *Build) fenced(ctx context.Context, mode string, r Reservation, tail bool,
	decide func(c rueidis.DedicatedClient, h held, g guards, t *tailState, token string) (rueidis.Commands, error)) error {
	return b.batches.do(ctx, b, &fencedOp{mode: mode, r: r, tail: tail, decide: decide})
}

// holding is the check of every fenced transition but the heartbeat's: meta
// present, r still held, the unit's state present (see held.settled).
func holding(r Reservation, h held) error {
	return h.settled(r, fence.Expect{EntryID: r.EntryID, Owner: r.WorkerID, DeliveryCount: r.DeliveryCount})
}

// batchContext is the context a batch commits under. A lone transition's is
// its caller's. A batch carries the values of its first op's context and
// ends only when every caller's has (its cancellation then takes effect
// between attempts, as for any transition), with the latest of their
// deadlines when each has one, for the connection's timeouts.
func batchContext(batch []*fencedOp) (context.Context, context.CancelFunc) {
	if len(batch) == 1 {
		return batch[0].ctx, func() {}
	}
	base := context.WithoutCancel(batch[0].ctx)
	var latest time.Time
	for _, o := range batch {
		d, ok := o.ctx.Deadline()
		if !ok {
			latest = time.Time{}
			break
		}
		if d.After(latest) {
			latest = d
		}
	}
	cancelDeadline := context.CancelFunc(func() {})
	if !latest.IsZero() {
		base, cancelDeadline = context.WithDeadline(base, latest)
	}
	ctx, cancel := context.WithCancelCause(base)
	var left atomic.Int32
	left.Store(int32(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, o := range batch {
		stops[i] = context.AfterFunc(o.ctx, func() {
			if left.Add(-1) == 0 {
				cancel(o.ctx.Err())
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
		cancelDeadline()
	}
}
