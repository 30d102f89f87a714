package live

import "time"

// ETA estimates the time left from what the units are expected to take,
// not from the pace so far, which knows nothing of the one long unit left
// for last: the expected remaining work (the units waiting, in full, and
// what the running ones have left) over the live slots, never below the
// longest running unit's expected remainder. A unit is expected to take
// what this build measured of it, else what earlier builds did
// (Snapshot.Expected), else the mean of all that is known. ok is false
// while nothing is known, and with no live slot; a complete build has 0.
func (s Snapshot) ETA() (time.Duration, bool) {
	if s.Complete() {
		return 0, true
	}
	mean, known := s.meanKnown()
	slots := s.Slots()
	if !known || slots == 0 {
		return 0, false
	}
	expect := func(u string) time.Duration {
		if d, ok := s.Measured[u]; ok {
			return d
		}
		if d, ok := s.Expected[u]; ok {
			return d
		}
		return mean
	}
	var work, floor time.Duration
	for _, r := range s.Running {
		left := max(expect(r.UnitID)-r.For, 0)
		work += left
		floor = max(floor, left)
	}
	for _, u := range s.Pending {
		work += expect(u)
	}
	if unnamed := s.Total - s.Finalized - int64(len(s.Running)) - int64(len(s.Pending)); unnamed > 0 {
		work += time.Duration(unnamed) * mean // meta did not list the units
	}
	return max(work/time.Duration(slots), floor), true
}

// meanKnown is the mean of every duration known, this build's and earlier
// builds'; known is false when there is none.
func (s Snapshot) meanKnown() (time.Duration, bool) {
	var sum time.Duration
	n := 0
	for _, t := range []map[string]time.Duration{s.Measured, s.Expected} {
		for _, d := range t {
			sum += d
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / time.Duration(n), true
}
