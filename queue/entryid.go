package queue

import (
	"strconv"
	"strings"
)

// parseEntryID splits a stream entry id "<ms>-<seq>" written the one way
// Redis writes it: both parts decimal, without sign or leading zeros (0
// itself is "0"). Redis also reads "01-0", "1-00" or "+1-0" as 1-0 in
// XPENDING, XACK and XCLAIM, but an entry's guard key is named after the id
// as the caller spelt it (see Keys.entryGuard): two spellings of one entry
// would be two guards, and a transition watching one would not see a commit
// that wrote the other. Refusing every other spelling, rather than
// rewriting it, keeps one name per entry everywhere: in guards, in events
// and in what the caller holds, which is also what a reclaim hands out.
// See docs/design.md#entry-ids.
func parseEntryID(id string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	if !found {
		return 0, 0, false
	}
	ms, ok1 := parseCanonicalUint(a)
	seq, ok2 := parseCanonicalUint(b)
	return ms, seq, ok1 && ok2
}

// parseCanonicalUint reads a decimal uint64 written as FormatUint writes
// it, and nothing else.
func parseCanonicalUint(s string) (uint64, bool) {
	if s == "" || s[0] < '0' || s[0] > '9' || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// nextEntryID returns the id XADD * would give the next entry of a stream
// whose last generated id is last, at server time now: now-0 when the clock
// has moved past it, else the same millisecond with the next sequence. A
// requeue must know its new entry's id before it commits (its event names
// it), so it picks the id itself and guards the stream's tail.
func nextEntryID(last string, now int64) string {
	ms, seq, ok := parseEntryID(last)
	if !ok {
		ms, seq = 0, 0
	}
	if now > 0 && uint64(now) > ms {
		return strconv.FormatInt(now, 10) + "-0"
	}
	if seq == ^uint64(0) {
		return strconv.FormatUint(ms+1, 10) + "-0"
	}
	return strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq+1, 10)
}
