package queue

import (
	"slices"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// A worker that runs units back to back settles one and reserves the next:
// the reservation's reads (the reclaim's first look, the priority stream,
// the units stream) wait for the settlement's reply, then cost round trips
// of their own. For a worker that said it will reserve again
// (ReserveOptions.ReadAhead), the settlement that leaves it holding nothing
// carries those reads behind its EXEC, in the same write, and the Build
// keeps their replies for the worker's next ReserveBatch: the entries the
// read delivered, stashed, come first; then a reclaim, on the first look
// while younger than aheadMaxAge; then reads as without read-ahead. See
// docs/design.md#read-ahead.
//
// Entries an XREADGROUP ">" delivers are pending under the worker at once,
// and nothing heartbeats them until they are accounted for: an entry
// stashed while the worker runs another unit would go idle, and be
// reclaimed, if that unit ran past the timeout. So a read-ahead reads one
// stream only, COUNT n, and the next call gives all it delivered: the
// priority stream unless the previous read-ahead found it empty and its
// last-generated-id has not moved since (aheadPrio); and the stash goes
// before a due reclaim, the look that shows one making the next
// read-ahead the look alone. A worker that does not reserve again leaves
// what was read to a reclaim after the timeout: hence the opt-in,
// StopReadAhead for a worker that is stopping, and no new reads while the
// stash holds entries. A read-ahead never
// changes the settlement's outcome: its replies are read apart, and a
// failed one is dropped (a lost reply may have delivered entries, which
// are then reclaimed after the timeout, as after a crash between a read
// and its accounting).

// aheadMaxAge is the oldest read-ahead first look a reclaim stands on.
const aheadMaxAge = machinery.KeptMaxAge

// readAheads is what a Build keeps per worker that reads ahead.
type readAheads struct {
	mu       sync.Mutex
	byWorker map[string]*aheadState
}

// aheadState is one worker's read-ahead.
type aheadState struct {
	on     bool // it said it reserves again: its last settlement carries the reads
	n      int
	opts   ReserveOptions // with defaults
	held   []entryAt      // what its last ReserveBatch gave, not yet settled
	stash  []stashed      // entries delivered ahead, not yet given
	look   *firstLook
	lookAt time.Time
	lookOn ReserveOptions // the terms the look was made on
	// lookOnly: the stash went before a reclaim a look showed; the next
	// read-ahead reads the look alone, so that the reclaim comes next.
	lookOnly bool
	// prioEmptyAt is the priority stream's last-generated-id when a
	// read-ahead found it empty, "" when it may hold entries: the next
	// read-ahead reads the units stream only while it is set.
	prioEmptyAt string
}

// stashed is an entry read ahead: pending under the worker, not accounted.
type stashed struct {
	s Stream
	x rueidis.XRangeEntry
}

// isSettlement tells the transitions after which a worker no longer holds
// the reservation.
func isSettlement(mode string) bool {
	return mode == ModeFinalize || mode == ModeRequeue || mode == ModeAbandoned
}

// state returns worker's state, made if missing. k.mu is held.
func (k *readAheads) state(worker string) *aheadState {
	st := k.byWorker[worker]
	if st == nil {
		if k.byWorker == nil {
			k.byWorker = map[string]*aheadState{}
		}
		st = &aheadState{}
		k.byWorker[worker] = st
	}
	return st
}

// tidy forgets worker when nothing of it is left. k.mu is held.
func (k *readAheads) tidy(worker string) {
	if st := k.byWorker[worker]; st != nil && !st.on && len(st.held) == 0 && len(st.stash) == 0 && st.look == nil && !st.lookOnly && st.prioEmptyAt == "" {
		delete(k.byWorker, worker)
	}
}

// aheadTake is what a ReserveBatch starts from.
type aheadTake struct {
	look  *firstLook // fresh, made on the call's terms; nil: none
	stash []stashed
}

// take hands worker's next ReserveBatch (on opts, with defaults) what was
// read ahead for it, and forgets what it held and whether it reads ahead:
// given records them anew.
func (k *readAheads) take(worker string, opts ReserveOptions) aheadTake {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.byWorker[worker]
	if st == nil {
		return aheadTake{}
	}
	t := aheadTake{stash: st.stash}
	same := st.lookOn.Timeout == opts.Timeout && st.lookOn.MaxReclaims == opts.MaxReclaims
	if st.look != nil && same && time.Since(st.lookAt) <= aheadMaxAge {
		t.look = st.look
	}
	st.on, st.held, st.stash, st.look = false, nil, nil, nil
	k.tidy(worker)
	return t
}

// given records what a ReserveBatch of worker gave (rs) and left stashed
// (rest); ahead: the call asked to read ahead, on n and opts; lookOnly:
// the next read-ahead reads the look alone.
func (k *readAheads) given(worker string, n int, opts ReserveOptions, ahead bool, rs []Reservation, rest []stashed, lookOnly bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.state(worker)
	st.stash = append(rest, st.stash...)
	st.lookOnly = lookOnly
	st.on, st.n, st.opts, st.held = ahead && len(rs) > 0, n, opts, nil
	for _, r := range rs {
		if st.on {
			st.held = append(st.held, entryAt{r.Stream, r.EntryID})
		}
	}
	k.tidy(worker)
}

// StopReadAhead tells the Build that worker will not reserve again: the
// settlement that leaves it holding nothing carries no reads. Entries
// already read ahead for it stay pending under its name, and are reclaimed
// by another worker after the timeout. Safe for concurrent use.
func (b *Build) StopReadAhead(worker string) {
	k := &b.eng.ahead
	k.mu.Lock()
	defer k.mu.Unlock()
	if st := k.byWorker[worker]; st != nil {
		st.on = false
		k.tidy(worker)
	}
}

// before puts ahead of behind, what batch's commit carries behind its
// EXEC, the reads it carries for the workers it leaves holding nothing:
// before any WATCH the others carry.
func (k *readAheads) before(e *engine, batch []*fencedOp, behind []txn.Behind[rueidis.DedicatedClient]) []txn.Behind[rueidis.DedicatedClient] {
	t := k.carry(e, batch)
	if t == nil {
		return behind
	}
	return append([]txn.Behind[rueidis.DedicatedClient]{t}, behind...)
}

// carry returns the reads batch's commit carries behind its EXEC: those of
// each worker whose last held reservation the batch settles; nil: none.
func (k *readAheads) carry(e *engine, batch []*fencedOp) *aheadTrip {
	k.mu.Lock()
	defer k.mu.Unlock()
	var t *aheadTrip
	for _, op := range batch {
		st := k.byWorker[op.r.WorkerID]
		if st == nil || !st.on || !isSettlement(op.mode) {
			continue
		}
		at := entryAt{op.r.Stream, op.r.EntryID}
		i := slices.Index(st.held, at)
		if i < 0 {
			continue
		}
		st.held = slices.Delete(st.held, i, i+1)
		if len(st.held) > 0 {
			continue
		}
		st.on = false // once per reservation: the next ReserveBatch says again
		k.tidy(op.r.WorkerID)
		if t == nil {
			t = &aheadTrip{k: k, e: e}
		}
		rd := aheadRead{worker: op.r.WorkerID, n: st.n, opts: st.opts, entries: len(st.stash) == 0 && !st.lookOnly, stream: StreamPriority}
		if st.prioEmptyAt != "" {
			rd.stream = StreamUnits
		}
		t.reads = append(t.reads, rd)
	}
	return t
}
