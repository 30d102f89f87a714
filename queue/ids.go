package queue

import (
	"fmt"
	"strings"
	"unicode/utf8"
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
