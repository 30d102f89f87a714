package queue

import (
	"slices"
	"sync"

	"github.com/redis/rueidis"
)

// A reclaim's decision stands on the state of the unit it would claim, and
// the unit is named only inside the stream entry: pending list, then entry,
// then the unit's state is a chain of three reads, each waiting on the one
// before, and the commit comes after them. But an entry's fields never
// change once it is added, so a build can remember which unit each entry it
// has seen carries: the entries its workers read, and those a reclaim's
// first look finds in the pending window and ranges with its next first
// look. A reclaim that already knows the unit of the entry it finds idle
// then reads the unit's state in the same round trip as the entry, watched
// like the rest, and claims in three round trips instead of four.
//
// For a reclaim, what is remembered only chooses what to prefetch. Its
// decision is always made on the entry as the watched read returns it: a
// unit that turns out not to be the one prefetched has its state read in
// one more round trip, as when nothing was known. The fenced transitions
// check their caller's unit against it (see entryUnitCheck), which needs
// no watch: what an entry carries is fixed when it is added. An entry
// remembered and since deleted from the stream is still checked.

// maxEntryUnits bounds what a build remembers. Past it, everything but the
// latest pending windows is forgotten; an entry forgotten is ranged again
// when it shows up in a window.
const maxEntryUnits = 4096

// entryUnits is a build's memory of which unit each stream entry carries.
type entryUnits struct {
	mu     sync.Mutex
	units  map[entryAt]string // "": ranged, and it names none (deleted, or no id field)
	window []entryAt          // the latest first look's pending windows
	wanted []entryAt          // of those, the entries whose unit is not known
	off    bool               // the inline engine's: nothing is remembered (newCore, engine.go)
}

// learn records that the entry at carries unit.
func (e *entryUnits) learn(at entryAt, unit string) {
	if e.off {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.units == nil {
		e.units = make(map[entryAt]string)
	}
	known, ok := e.units[at]
	if ok && (known != "" || unit == "") {
		return
	}
	if !ok && len(e.units) >= maxEntryUnits {
		kept := make(map[entryAt]string, len(e.window)+1)
		for _, w := range e.window {
			if u, ok := e.units[w]; ok {
				kept[w] = u
			}
		}
		e.units = kept
	}
	e.units[at] = unit
}

// unit returns the unit the entry at carries, when known.
func (e *entryUnits) unit(at entryAt) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.units[at]
	return u, u != ""
}

// saw records the pending windows and idle candidates of a first look, so
// that the next first look ranges the entries among them whose unit is not
// known (see toRange).
func (e *entryUnits) saw(scans []streamScan) {
	if e.off {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.window, e.wanted = e.window[:0], e.wanted[:0]
	note := func(at entryAt) {
		if slices.Contains(e.window, at) {
			return // the candidate is often in the window too
		}
		e.window = append(e.window, at)
		if _, ok := e.units[at]; !ok {
			e.wanted = append(e.wanted, at)
		}
	}
	for _, sc := range scans {
		if sc.hasCnd {
			note(entryAt{sc.stream, sc.cand.EntryID})
		}
		for _, row := range sc.window {
			note(entryAt{sc.stream, row.EntryID})
		}
	}
}

// toRange returns the entries a first look should range to learn their
// units: those of the latest windows still unknown. Two reclaims that range
// the same entry learn the same unit.
func (e *entryUnits) toRange() []entryAt {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]entryAt, 0, len(e.wanted))
	for _, at := range e.wanted {
		if _, ok := e.units[at]; !ok {
			out = append(out, at)
		}
	}
	return out
}

// learnRanged records what XRANGE of one entry returned, and returns it
// parsed. An entry that names no unit is remembered as such, so that it is
// not ranged again by every first look while it stays pending; the reclaim
// that reaches it drops it or reports it.
func (e *entryUnits) learnRanged(at entryAt, r rueidis.RedisResult) entryFields {
	f := parseEntry(r)
	if r.Error() == nil { // else the read failed: nothing is known of the entry
		e.learnFields(at, f)
	}
	return f
}

func (e *entryUnits) learnFields(at entryAt, f entryFields) {
	unit := ""
	if f.exists && f.hasID {
		unit = f.id
	}
	e.learn(at, unit)
}

// unitsOf sets out[i], per op, to the unit its entry carries as
// remembered, "" where it is not known. A fenced transition checks it against the unit its caller
// names (see entryUnitCheck): an entry's fields never change, so what was
// read once stands, and the transition need not range the entry again.
func (e *entryUnits) unitsOf(ops []*fencedOp, out []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, op := range ops {
		out[i] = e.units[entryAt{op.Subject.Stream, op.Subject.EntryID}]
	}
}

// learnChecked records the unit of the entry op, the i-th of a batch whose
// reads were br, ranged (h: what op read): read once, known for good, so
// that op's worker's later transitions on the entry need not range it.
func (e *entryUnits) learnChecked(br batchReads, i int, op *fencedOp, h held) {
	if br.ranges(i, op) && h.entry.exists && h.entry.hasID {
		e.learn(entryAt{op.Subject.Stream, op.Subject.EntryID}, h.entry.id)
	}
}
