// Package reclaim holds what a reclaim of package queue decides with and
// that needs no key layout: the watch set of its second look.
package reclaim

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

// WatchSet is what a reclaim's second look WATCHes and ranges, of entries
// E. An entry is ranged only through Range, which watches it too: every
// entry ranged is watched.
type WatchSet[E comparable] struct {
	Keys    []string // the keys to WATCH
	Watched map[E]bool
	Ranged  []E // the entries to range, in order

	guard  func(E) string // the key of an entry's guard
	fenced bool           // entry guards are watched (see queue/keys.go)
}

// NewWatchSet is a watch set that watches first (the worker's guard), and
// each entry's guard as guard names it; none when not fenced.
func NewWatchSet[E comparable](first string, guard func(E) string, fenced bool) *WatchSet[E] {
	return &WatchSet[E]{Keys: []string{first}, Watched: map[E]bool{}, guard: guard, fenced: fenced}
}

// Watch adds the guard of the entry at to the keys watched.
func (w *WatchSet[E]) Watch(at E) {
	if w.fenced && !w.Watched[at] {
		w.Watched[at] = true
		w.Keys = append(w.Keys, w.guard(at))
	}
}

// Range adds the entry at to those ranged, and its guard to those
// watched.
func (w *WatchSet[E]) Range(at E) {
	w.Ranged = append(w.Ranged, at)
	w.Watch(at)
}

// Covers tells whether the guards of every entry of seen are among those
// watched: then none of them can change owner without aborting the
// commit. Without entry guards it always does.
func (w *WatchSet[E]) Covers(seen []E) bool {
	if !w.fenced {
		return true
	}
	for _, at := range seen {
		if !w.Watched[at] {
			return false
		}
	}
	return true
}
