package queue

import (
	"fmt"

	"github.com/hopper-queue/hopper/budget"
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
}

// parseEntry fills in what a fenced transition reads of one reservation,
// the replies of appendEntryReads: the entry's pending row, the unit's state
// when it was read, and the worker's record.
func (h *held) parseEntry(k Keys, r Reservation, reads []rueidis.RedisResult) error {
	pending, worker := reads[0], reads[len(reads)-1]
	withState := len(reads) == entryReadCount(true)
	var err error
	if h.row, h.pending, err = pendingRow(pending); err != nil {
		return fmt.Errorf("queue: XPENDING %s %s: %w", k.stream(r.Stream), r.EntryID, err)
	}
	if withState {
		raw, found, err := optionalString(reads[1])
		if err != nil {
			return err
		}
		if found {
			if h.state, err = budget.DecodeState([]byte(raw)); err != nil {
				return err
			}
			h.hasState = true
		}
	}
	raw, found, err := optionalString(worker)
	if err != nil {
		return err
	}
	h.worker, err = parseWorkerRecord(raw, found)
	return err
}

// entryReadCount is how many reads appendEntryReads appends.
func entryReadCount(withState bool) int {
	if withState {
		return 3
	}
	return 2
}

// appendEntryReads appends the reads parseEntry takes, in its order: the
// entry's pending row, the unit's state when withState, the worker's
// record. A heartbeat decides on the row alone, as the reference's does, so
// it neither fetches nor decodes the unit's state.
func (b *Build) appendEntryReads(cmds rueidis.Commands, c rueidis.DedicatedClient, r Reservation, withState bool) rueidis.Commands {
	k := b.keys
	cmds = append(cmds, c.B().Xpending().Key(k.stream(r.Stream)).Group(Group).Start(r.EntryID).End(r.EntryID).Count(1).Build())
	if withState {
		cmds = append(cmds, c.B().Hget().Key(k.UnitState).Field(r.UnitID).Build())
	}
	return append(cmds, c.B().Hget().Key(k.Workers).Field(r.WorkerID).Build())
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

// renew is the reference's renew_ttls: PEXPIRE on the six live keys, which
// touches only those that exist.
func (b *Build) renew(c rueidis.DedicatedClient, cmds rueidis.Commands) rueidis.Commands {
	for _, key := range b.keys.live() {
		cmds = append(cmds, c.B().Arbitrary("PEXPIRE").Keys(key).Args(b.ttlText).Build())
	}
	return cmds
}

func (b *Build) touchWorker(c rueidis.DedicatedClient, worker string, rec workerRecord, now int64, cur current, delta float64) rueidis.Completed {
	return c.B().Hset().Key(b.keys.Workers).FieldValue().FieldValue(worker, string(rec.touch(now, cur, delta))).Build()
}

func (b *Build) appendEvent(c rueidis.DedicatedClient, json []byte) rueidis.Completed {
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
