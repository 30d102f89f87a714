package queue

import (
	"slices"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/engine"
	"github.com/hopper-queue/hopper/queue/internal/machinery"
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
	k := &b.core.ahead
	k.mu.Lock()
	defer k.mu.Unlock()
	if st := k.byWorker[worker]; st != nil {
		st.on = false
		k.tidy(worker)
	}
}

// Carried is what batch's commit carries behind its EXEC (engine.Domain):
// the reads ahead of each worker whose last held reservation the batch
// settles; nil: none.
func (e *core) Carried(batch []*fencedOp) engine.Behind {
	if t := e.ahead.carry(e, batch); t != nil {
		return t
	}
	return nil
}

// carry returns the reads batch's commit carries behind its EXEC: those of
// each worker whose last held reservation the batch settles; nil: none.
func (k *readAheads) carry(e *core, batch []*fencedOp) *aheadTrip {
	k.mu.Lock()
	defer k.mu.Unlock()
	var t *aheadTrip
	for _, op := range batch {
		st := k.byWorker[op.Subject.WorkerID]
		if st == nil || !st.on || !isSettlement(op.Mode) {
			continue
		}
		at := entryAt{op.Subject.Stream, op.Subject.EntryID}
		i := slices.Index(st.held, at)
		if i < 0 {
			continue
		}
		st.held = slices.Delete(st.held, i, i+1)
		if len(st.held) > 0 {
			continue
		}
		st.on = false // once per reservation: the next ReserveBatch says again
		k.tidy(op.Subject.WorkerID)
		if t == nil {
			t = &aheadTrip{k: k, e: e}
		}
		rd := aheadRead{worker: op.Subject.WorkerID, n: st.n, opts: st.opts, entries: len(st.stash) == 0 && !st.lookOnly, stream: StreamPriority}
		if st.prioEmptyAt != "" {
			rd.stream = StreamUnits
		}
		t.reads = append(t.reads, rd)
	}
	return t
}

// aheadTrip is the reads one commit carries behind its EXEC for the
// workers it leaves holding nothing (read_ahead.go), a txn.Behind. It is
// sent once, by the commit's first attempt that gets as far as its EXEC:
// an attempt after an abort carries none, the entries delivered being
// stashed already.
type aheadTrip struct {
	k     *readAheads
	e     *core
	reads []aheadRead
	sent  bool
	at    time.Time // when Carry gave the reads
}

// aheadRead is the reads of one worker: its reclaim's first look (when
// due, see machinery.ReclaimPace, and the consumer policy is known: its probe
// is left to the reclaim), else the priority stream's info alone, for its
// last-generated-id (aheadPrio); then, entries set, XREADGROUP of stream,
// COUNT n, without waiting.
type aheadRead struct {
	worker   string
	n        int
	opts     ReserveOptions
	entries  bool
	stream   Stream
	look     int  // replies of the first look; 0: not sent
	info     bool // the priority stream's info sent in its place
	learning []entryAt
}

// Carry returns the reads, on c, the first time it is asked.
func (t *aheadTrip) Carry(c rueidis.DedicatedClient) rueidis.Commands {
	if t.sent {
		return nil
	}
	t.sent, t.at = true, time.Now()
	e := t.e
	var cmds rueidis.Commands
	for i := range t.reads {
		rd := &t.reads[i]
		timeoutMS := rd.opts.Timeout.Milliseconds()
		if _, probing := e.eng.Consumers.Probe(c); !probing && e.eng.Reclaims.Due(timeoutMS, t.at) {
			look, learning := e.firstLookCmds(c, timeoutMS)
			cmds = append(cmds, look...)
			rd.look, rd.learning = len(look), learning
		} else {
			cmds = append(cmds, c.B().XinfoStream().Key(e.schema.keys.Priority).Build())
			rd.info = true
		}
		if rd.entries {
			cmds = append(cmds, c.B().Xreadgroup().Group(Group, rd.worker).Count(int64(rd.n)).Streams().Key(e.schema.keys.stream(rd.stream)).Id(">").Build())
		}
	}
	return cmds
}

// Arrived takes the replies of the reads Carry gave, in order, whatever
// the commit's outcome: it keeps what they gave for each worker and drops
// what failed. It never holds c: it leaves no WATCH armed.
func (t *aheadTrip) Arrived(_ rueidis.DedicatedClient, _ func(), res []rueidis.RedisResult, _ error) bool {
	t.arrived(res)
	return false
}

func (t *aheadTrip) arrived(res []rueidis.RedisResult) {
	at := time.Now()
	for _, rd := range t.reads {
		look := res[:rd.look]
		res = res[rd.look:]
		var f *firstLook
		var prio aheadPrio
		if rd.look > 0 && noneLost(look) {
			r := &reclaimer{e: t.e, worker: rd.worker, timeoutMS: rd.opts.Timeout.Milliseconds(), fallbackMax: float64(rd.opts.MaxReclaims)}
			if got, err := r.parseFirstLook(look, rd.learning, t.at); err == nil {
				f = &got
				prio.gen = lastGenerated(look[2+2])
			}
		}
		if rd.info {
			prio.gen = lastGenerated(res[0])
			res = res[1:]
		}
		var got []stashed
		if rd.entries {
			var ok bool
			got, ok = delivered(t.e, rd.stream, res[0])
			prio.read, prio.empty = rd.stream == StreamPriority, ok && len(got) == 0
			res = res[1:]
		}
		t.k.keep(rd.worker, f, rd.opts, at, got, prio)
	}
}

// noneLost tells whether every reply of res came back.
func noneLost(res []rueidis.RedisResult) bool {
	for _, r := range res {
		if r.NonRedisError() != nil {
			return false
		}
	}
	return true
}

// delivered are the entries of stream s an XREADGROUP reply gave, and
// whether it answered; none when it failed (lost with the connection,
// entries may have been delivered all the same: they are reclaimed after
// the timeout).
func delivered(e *core, s Stream, r rueidis.RedisResult) ([]stashed, bool) {
	streams, err := r.AsXRead()
	if rueidis.IsRedisNil(err) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	var out []stashed
	for _, x := range streams[e.schema.keys.stream(s)] {
		out = append(out, stashed{s: s, x: x})
	}
	return out, true
}

// aheadPrio is what a read-ahead saw of the priority stream: its
// last-generated-id in the look ("": not known), and whether it was read
// and found empty.
type aheadPrio struct {
	gen         string
	read, empty bool
}

// emptyAt is the priority stream's last-generated-id while it is known
// empty after p, when it was known empty at was before ("": it may hold
// entries). Entries are only ever added with a new id, so a stream found
// empty stays so while its last-generated-id stays.
func (p aheadPrio) emptyAt(was string) string {
	switch {
	case p.gen == "":
		return ""
	case p.read && p.empty:
		return p.gen
	case !p.read && p.gen == was:
		return was
	}
	return ""
}

// lastGenerated reads last-generated-id from an XINFO STREAM reply; "":
// none.
func lastGenerated(r rueidis.RedisResult) string {
	info, err := r.AsMap()
	if err != nil {
		return ""
	}
	m, ok := info["last-generated-id"]
	if !ok {
		return ""
	}
	id, _ := m.ToString()
	return id
}

// keep records what a read-ahead gave worker: its first look (nil: none)
// made at at on opts, the entries it delivered, behind any stashed
// before, and what it saw of the priority stream.
func (k *readAheads) keep(worker string, f *firstLook, opts ReserveOptions, at time.Time, got []stashed, prio aheadPrio) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.state(worker)
	st.prioEmptyAt = prio.emptyAt(st.prioEmptyAt)
	if f != nil {
		st.look, st.lookAt, st.lookOn = f, at, opts
	}
	st.stash = append(st.stash, got...)
	k.tidy(worker)
}
