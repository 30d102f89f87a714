package timings

import (
	"slices"
	"time"
)

// LongestFirst returns units ordered longest expected first, from what
// known holds. A unit known holds nothing of is expected to take as long as
// the longest known unit and goes ahead of every known unit: a new unit is
// never left for last, where it could be the slowest of all. Units
// expected to take equally long keep their given order, and with nothing
// known the order is the given one. units is not modified.
func LongestFirst(units []string, known Table) []string {
	out := slices.Clone(units)
	longest, found := time.Duration(0), false
	for _, u := range units {
		if d, ok := known[u]; ok {
			longest, found = max(longest, d), true
		}
	}
	if !found {
		return out
	}
	rank := func(u string) (bool, time.Duration) {
		d, ok := known[u]
		if !ok {
			return false, longest
		}
		return true, d
	}
	slices.SortStableFunc(out, func(a, b string) int {
		ka, da := rank(a)
		kb, db := rank(b)
		switch {
		case da != db:
			if da > db {
				return -1
			}
			return 1
		case ka != kb:
			if !ka {
				return -1 // unknown ahead of a known unit of the same estimate
			}
			return 1
		}
		return 0
	})
	return out
}
