package queue

import (
	"strconv"
	"strings"
)

// parseEntryID splits a stream entry id "<ms>-<seq>".
func parseEntryID(id string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	if !found {
		return 0, 0, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return ms, seq, err1 == nil && err2 == nil
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
