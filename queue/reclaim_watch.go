package queue

// A reclaim's second look is the read its decision stands on. It ranges
// the candidates and the entries whose fate the walk must read, and it
// watches the guards of the candidates and of every entry in the windows,
// not only of those ranged. Which entry the walk claims, and whether it
// claims from the priority stream at all, depends on which entries the
// window holds: a busy entry settled in between lets one past the window
// into it, which may be idle (a walk run after that settlement claims it),
// and a settlement retires its entry's guard. Only the second look watches
// that many keys; the first, which usually finds nothing to do, watches
// none (docs/design.md#reclaim-watch).

// watchSet is what a reclaim's second look WATCHes and ranges. An entry is
// ranged only through rangeEntry, which watches it too: every entry ranged
// is watched.
type watchSet struct {
	k       Keys
	keys    []string         // the keys to WATCH
	watched map[entryAt]bool // the entries whose guards are among keys
	ranged  []entryAt        // the entries to range, in order
}

// watchFor is the watch set of the second look after first: the worker's
// guard, the candidates and the entries first looked at, ranged, and
// every entry of the windows.
func watchFor(k Keys, workerGuard string, first firstLook) *watchSet {
	w := &watchSet{k: k, keys: []string{workerGuard}, watched: map[entryAt]bool{}, ranged: make([]entryAt, 0, len(first.looked)+2)}
	for _, sc := range first.scans {
		if sc.hasCnd {
			w.rangeEntry(entryAt{sc.stream, sc.cand.EntryID})
		}
		for _, row := range sc.window {
			w.watch(entryAt{sc.stream, row.EntryID})
		}
	}
	for at := range first.looked {
		w.rangeEntry(at)
	}
	return w
}

// watch adds the guard of the entry at to the keys watched (none under the
// hopper_unfenced build tag).
func (w *watchSet) watch(at entryAt) {
	if entryGuards && !w.watched[at] {
		w.watched[at] = true
		w.keys = append(w.keys, w.k.entryGuard(at.stream, at.id))
	}
}

// rangeEntry adds the entry at to those ranged, and its guard to those
// watched.
func (w *watchSet) rangeEntry(at entryAt) {
	w.ranged = append(w.ranged, at)
	w.watch(at)
}

// covers tells whether the guards of every entry in the scans' windows,
// and of their candidates, are among those watched: then no entry can
// leave a window, or stop being its stream's candidate by being settled,
// without aborting the commit. Without entry guards it always does.
func (w *watchSet) covers(scans []streamScan) bool {
	if !entryGuards {
		return true
	}
	for _, sc := range scans {
		if sc.hasCnd && !w.watched[entryAt{sc.stream, sc.cand.EntryID}] {
			return false
		}
		for _, row := range sc.window {
			if !w.watched[entryAt{sc.stream, row.EntryID}] {
				return false
			}
		}
	}
	return true
}
