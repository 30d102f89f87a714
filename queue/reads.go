package queue

import (
	"fmt"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// guards are the guard keys of one reservation: its worker's and its
// entry's, named once per transition.
type guards struct{ worker, entry string }

func (b *Build) guardsOf(r Reservation) guards {
	return guards{worker: b.keys.workerGuard(r.WorkerID), entry: b.keys.entryGuard(r.Stream, r.EntryID)}
}

// held is what a fenced transition reads, in one round trip, right after it
// WATCHes the guards of the entry and of the worker (see commitBatch).
type held struct {
	metaExists bool
	row        fence.Row
	pending    bool
	state      budget.State
	hasState   bool
	worker     workerRecord
	now        int64
	// stateErr and workerErr are why the unit's state or the worker's
	// record could not be decoded. They are reported where the
	// reference's cjson.decode would fail, after its fence check and the
	// state's presence (see held.settled): a stale reservation is told so
	// whatever the records hold.
	stateErr, workerErr error
}

// batchReads are the reads of a batch's transitions after those they share
// (meta, the time, the tail): one HMGET of the workers' records, one HMGET
// of the units' states for the transitions that decide on theirs (all but
// the heartbeat, which decides on the pending row alone, as the
// reference's does), then each transition's pending row. One HMGET for
// many fields costs the server less than as many HGETs.
type batchReads struct {
	units int // fields of the states' HMGET; 0: not sent
}

// appendBatchReads appends the reads of ops, in the order replies takes
// them (batchTrip.reads counts the units' states among them).
func (b *Build) appendBatchReads(cmds rueidis.Commands, c rueidis.DedicatedClient, ops []*fencedOp) rueidis.Commands {
	k := b.keys
	var wbuf, ubuf [4]string // a batch of a few needs no allocation
	workers, units := wbuf[:0], ubuf[:0]
	for _, op := range ops {
		workers = append(workers, op.r.WorkerID)
		if op.readsState() {
			units = append(units, op.r.UnitID)
		}
	}
	cmds = append(cmds, c.B().Hmget().Key(k.Workers).Field(workers...).Build())
	if len(units) > 0 {
		cmds = append(cmds, c.B().Hmget().Key(k.UnitState).Field(units...).Build())
	}
	for _, op := range ops {
		cmds = append(cmds, c.B().Xpending().Key(k.stream(op.r.Stream)).Group(Group).Start(op.r.EntryID).End(op.r.EntryID).Count(1).Build())
	}
	return cmds
}

// count is how many replies the reads of ops take.
func (br batchReads) count(ops int) int {
	if br.units > 0 {
		return 2 + ops
	}
	return 1 + ops
}

// batchReplies are the replies of a batch's reads, split.
type batchReplies struct {
	workers, states []rueidis.RedisMessage
	werr, serr      error
	pending         []rueidis.RedisResult
	unit            int // the next state to take
}

// replies splits res, the replies of the reads of ops.
func (br batchReads) replies(ops int, res []rueidis.RedisResult) batchReplies {
	var r batchReplies
	r.workers, r.werr = fieldValues(res[0], ops, "HMGET workers")
	if br.units > 0 {
		r.states, r.serr = fieldValues(res[1], br.units, "HMGET unit_state")
	}
	r.pending = res[br.count(ops)-ops:]
	return r
}

// held fills in h, which holds what the batch shares, with what op, the
// i-th of the batch, read; ops must be taken in order. An error is op's
// alone as far as the replies allow: a failed HMGET fails every op that
// needs it.
func (r *batchReplies) held(k Keys, i int, op *fencedOp, h *held) error {
	var state *rueidis.RedisMessage
	if op.readsState() {
		if r.serr == nil {
			state = &r.states[r.unit]
		}
		r.unit++
	}
	switch {
	case !h.metaExists:
		return nil // the decision is CORRUPT, whatever the rest says
	case r.werr != nil:
		return r.werr
	case op.readsState() && r.serr != nil:
		return r.serr
	}
	return h.parseEntry(k, op.r, r.pending[i], state, r.workers[i])
}

// fieldValues reads an HMGET reply of n fields.
func fieldValues(r rueidis.RedisResult, n int, what string) ([]rueidis.RedisMessage, error) {
	vals, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	if len(vals) != n {
		return nil, fmt.Errorf("queue: %s returned %d values for %d fields", what, len(vals), n)
	}
	return vals, nil
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
			if h.state, err = budget.DecodeState([]byte(raw)); err != nil {
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

// optionalField reads one value of an HMGET reply, nil for a missing field.
func optionalField(m rueidis.RedisMessage) (string, bool, error) {
	if m.IsNil() {
		return "", false, nil
	}
	s, err := m.ToString()
	return s, err == nil, err
}

// pendingRows parses an extended XPENDING reply: [id, consumer, idle, count]...
func pendingRows(r rueidis.RedisResult) ([]fence.Row, error) {
	msgs, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	rows := make([]fence.Row, 0, len(msgs))
	for _, m := range msgs {
		f, err := m.ToArray()
		if err != nil || len(f) != 4 {
			return nil, fmt.Errorf("unexpected XPENDING row %v", m)
		}
		var row fence.Row
		var e1, e2, e3, e4 error
		row.EntryID, e1 = f[0].ToString()
		row.Consumer, e2 = f[1].ToString()
		row.IdleMS, e3 = f[2].AsInt64()
		row.DeliveryCount, e4 = f[3].AsInt64()
		if e1 != nil || e2 != nil || e3 != nil || e4 != nil {
			return nil, fmt.Errorf("unexpected XPENDING row %v", m)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func pendingRow(r rueidis.RedisResult) (fence.Row, bool, error) {
	rows, err := pendingRows(r)
	if err != nil || len(rows) == 0 {
		return fence.Row{}, false, err
	}
	return rows[0], true, nil
}

// optionalString reads a bulk string reply that may be nil.
func optionalString(r rueidis.RedisResult) (string, bool, error) {
	s, err := r.ToString()
	if rueidis.IsRedisNil(err) {
		return "", false, nil
	}
	return s, err == nil, err
}

// metaPresent is the read of every transition's first check, the
// reference's meta_present: 1 when meta is there, 0 when not. It asks for
// meta's state, which only a publisher writes, in the transaction that
// creates meta, rather than for the key: a meta deleted or evicted between
// a settlement's reads and its commit (meta is read, not watched: every
// finalize writes it) is re-created by that commit's count, holding that
// field alone, and every transition after it must still find the build's
// state gone. A meta that holds its state is one the script finds present
// too; one without it, the script never leaves behind.
func (b *Build) metaPresent(c rueidis.DedicatedClient) rueidis.Completed {
	return c.B().Hexists().Key(b.keys.Meta).Field(metaState).Build()
}

// renew is the reference's renew_ttls: PEXPIRE on the six live keys, which
// touches only those that exist.
func (b *Build) renew(c rueidis.DedicatedClient, cmds rueidis.Commands) rueidis.Commands {
	for _, key := range b.keys.live() {
		cmds = append(cmds, c.B().Arbitrary("PEXPIRE").Keys(key).Args(b.ttlText).Build())
	}
	if b.keys.baseMeta != "" {
		cmds = append(cmds, c.B().Arbitrary("PEXPIRE").Keys(b.keys.baseMeta).Args(b.ttlText).Build())
	}
	return cmds
}

func (b *Build) touchWorker(c rueidis.DedicatedClient, worker string, rec workerRecord, now int64, cur current, delta float64) rueidis.Completed {
	return c.B().Hset().Key(b.keys.Workers).FieldValue().FieldValue(worker, string(rec.touch(now, cur, delta))).Build()
}

func (b *Build) appendEvent(c rueidis.DedicatedClient, json []byte) rueidis.Completed {
	json = events.StampRound(json, b.keys.round)
	return c.B().Xadd().Key(b.keys.Attempts).Id("*").FieldValue().FieldValue("json", string(json)).Build()
}

// setGuard marks a change to what a guard protects, so that every
// transaction that read it under WATCH aborts and reads again.
func (b *Build) setGuard(c rueidis.DedicatedClient, key, token string) rueidis.Completed {
	return c.B().Arbitrary("SET").Keys(key).Args(token, "PX", b.ttlText).Build()
}

// dropGuard retires the guard of an entry that is gone from the pending list.
// A DEL alone would not do: deleting a key that does not exist (an entry
// never heartbeated or reclaimed has no guard yet) changes nothing, and a
// transaction watching the absent key would still commit. SET then DEL, in
// the same MULTI, aborts every watcher and leaves no key behind.
func (b *Build) dropGuard(c rueidis.DedicatedClient, key, token string) rueidis.Commands {
	return rueidis.Commands{b.setGuard(c, key, token), c.B().Del().Key(key).Build()}
}
