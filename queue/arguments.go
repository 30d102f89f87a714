package queue

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hopper-queue/hopper/events"
)

// MaxIDBytes bounds build, worker and unit ids. Ids travel in key names,
// events and every worker record; a megabyte of id is a mistake, not a name.
const MaxIDBytes = 1024

// checkID refuses an id that cannot name anything: empty, oversized or not
// UTF-8 (events are JSON, which would silently mangle invalid bytes).
func checkID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalidArgument, what)
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: %s is %d bytes, over %d", ErrInvalidArgument, what, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalidArgument, what, id)
	}
	return nil
}

// checkEntryID accepts a stream entry id only as Redis prints one:
// "<ms>-<seq>", decimal, without sign or leading zeros. Redis would read
// "01-0" as 1-0, but its guard would be another key (see parseEntryID).
func checkEntryID(id string) error {
	if _, _, ok := parseEntryID(id); !ok {
		return errInvalid("entry id %q is not <ms>-<seq> as Redis writes it (decimal, no sign, no leading zeros)", id)
	}
	return nil
}

func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// checkBuildID refuses a build id that cannot name a build: empty,
// oversized, not UTF-8, or holding a brace. The build id is the cluster hash
// tag of every key of the build ("hopper:{<build>}:..."); a brace in it would
// make the tag something else than the build id.
func checkBuildID(id string) error {
	if err := checkID("build id", id); err != nil {
		return err
	}
	if strings.ContainsAny(id, "{}") {
		return errInvalid("build id %q holds a brace, which would change its keys' hash tag", id)
	}
	return nil
}

// CheckWorkerID refuses a worker id no transition would accept (empty,
// oversized, not UTF-8), so that a caller can say so before it starts.
func CheckWorkerID(id string) error { return checkID("worker id", id) }

// checkMS refuses a duration in milliseconds the log cannot carry as a
// plain number: NaN, infinite, negative, or from events.MaxMS up (the
// event's encoder would refuse it only after the transition's first round
// trip, and not as a bad argument). what names the duration in the error.
func checkMS(what string, ms float64) error {
	if math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 || ms >= events.MaxMS {
		return errInvalid("%s %v ms is not a non-negative number below 1e21", what, ms)
	}
	return nil
}

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
