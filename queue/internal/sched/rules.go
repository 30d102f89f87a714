package sched

import "slices"

// inFlight tells whether one of c's worker, unit or entry is in a batch in
// flight. s.mu is held.
func (s *Scheduler[T]) inFlight(c Claims) bool {
	for _, k := range c.keys() {
		if s.busy[k] > 0 {
			return true
		}
	}
	return false
}

// waiting tells whether an op of c's worker, unit or entry is waiting: the
// op goes behind it. s.mu is held.
func (s *Scheduler[T]) waiting(c Claims) bool {
	mine := c.keys()
	for _, o := range s.pending {
		for _, k := range o.Claims().keys() {
			if slices.Contains(mine[:], k) {
				return true
			}
		}
	}
	return false
}

// mayLead tells whether an op of claims c may lead a batch now, a lane
// aside: nothing of its own in flight, and no other batch in flight
// holding requeues when it may requeue. s.mu is held.
func (s *Scheduler[T]) mayLead(c Claims) bool {
	return (!c.Tail || !s.tailBusy) && !s.inFlight(c)
}

// touches tells whether c touches one of keys.
func touches(keys map[key]bool, c Claims) bool {
	for _, k := range c.keys() {
		if keys[k] {
			return true
		}
	}
	return false
}

// nextLeader is the index of the first waiting op that may lead a batch
// now and is not behind a waiting op of its own worker, unit or entry; -1:
// none. anyLane: whether or not a lane is free. s.mu is held.
func (s *Scheduler[T]) nextLeader(anyLane bool) int {
	behind := map[key]bool{}
	for i, o := range s.pending {
		c := o.Claims()
		if (anyLane || s.lanes < s.limits.MaxLanes) && s.mayLead(c) && !touches(behind, c) {
			return i
		}
		for _, k := range c.keys() {
			behind[k] = true
		}
	}
	return -1
}

// mark counts batch in flight (n 1) or done (n -1). s.mu is held.
func (s *Scheduler[T]) mark(batch []T, n int) {
	for _, o := range batch {
		for _, k := range o.Claims().keys() {
			if s.busy[k] += n; s.busy[k] == 0 {
				delete(s.busy, k)
			}
		}
	}
}

// open gives first a lane and its batch: first, then the waiting ops that
// can share its transaction, in order. s.mu is held.
func (s *Scheduler[T]) open(first T) []T {
	s.lanes++
	batch := []T{first}
	fc := first.Claims()
	tail := fc.Tail
	in := []Claims{fc}
	overlaps := func(c Claims) bool {
		for _, b := range in {
			// Each op is decided on what was read before any of them
			// wrote: no two of one worker, unit or entry.
			if b.Worker == c.Worker || b.Unit == c.Unit || b.Stream == c.Stream && b.Entry == c.Entry {
				return true
			}
		}
		return false
	}
	left := s.pending[:0]
	behind := map[key]bool{} // what the ops left waiting touch: those behind them wait too
	for _, o := range s.pending {
		c := o.Claims()
		switch {
		case len(batch) >= s.limits.MaxBatch, overlaps(c), s.inFlight(c), c.Tail && !tail && s.tailBusy, touches(behind, c):
			left = append(left, o)
			for _, k := range c.keys() {
				behind[k] = true
			}
		default:
			batch = append(batch, o)
			in = append(in, c)
			tail = tail || c.Tail
		}
	}
	clear(s.pending[len(left):])
	s.pending = left
	s.tailBusy = s.tailBusy || tail
	s.mark(batch, 1)
	return batch
}
