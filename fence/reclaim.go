package fence

// ScanWindow is how many pending entries one reclaim looks at from the start
// of a stream's pending list: the reach of one XAUTOCLAIM with COUNT 1, whose
// walk a reclaim follows (see docs/design.md#reclaim).
const ScanWindow = 10

// Idle reports whether a pending entry is eligible for reclaim after
// timeoutMS: a zero timeout makes every pending entry eligible, as it does for
// XAUTOCLAIM and XPENDING IDLE.
func Idle(row Row, timeoutMS int64) bool {
	return timeoutMS == 0 || row.IdleMS >= timeoutMS
}

// Pending is one entry of a reclaim's pending window, with what the reclaim
// knows of its stream entry.
type Pending struct {
	Row
	// MayBeDeleted: the stream entry might be gone (the stream's
	// max-deleted-entry-id does not rule it out).
	MayBeDeleted bool
	// Read: the stream entry was read; Present tells whether it is there.
	Read, Present bool
}

// WalkEnd is where a reclaim's walk of one stream's pending window ends.
type WalkEnd struct {
	// At is the index of the entry the walk ends on; -1: none, the walk
	// passed over the whole window.
	At int
	// Drop: that entry is deleted from the stream, and the walk drops it
	// from the pending list; otherwise it is idle, and the walk claims it.
	Drop bool
}

// Walk walks one stream's pending window as XAUTOCLAIM ... COUNT 1 would
// (docs/design.md#reclaim): the first entry deleted from the stream is
// dropped, and ends the walk; the first idle for timeoutMS is claimed; the
// rest are passed over. Only the entries the walk may end on
// (idle, or maybe deleted) need their stream entry read: ok is false when
// the walk reaches one that was not, and the caller must read it first
// (see ToRead).
func Walk(window []Pending, timeoutMS int64) (end WalkEnd, ok bool) {
	for i, p := range window {
		idle := Idle(p.Row, timeoutMS)
		if !idle && !p.MayBeDeleted {
			continue
		}
		if !p.Read {
			return WalkEnd{At: -1}, false
		}
		if !p.Present {
			return WalkEnd{At: i, Drop: true}, true
		}
		if idle {
			return WalkEnd{At: i}, true
		}
	}
	return WalkEnd{At: -1}, true
}

// ToRead returns the indexes of the window's entries whose stream entry
// Walk may need: up to and including the first idle one, where the walk
// ends either way, those that are idle or might be deleted.
func ToRead(window []Pending, timeoutMS int64) []int {
	var out []int
	for i, p := range window {
		idle := Idle(p.Row, timeoutMS)
		if idle || p.MayBeDeleted {
			out = append(out, i)
		}
		if idle {
			break
		}
	}
	return out
}
