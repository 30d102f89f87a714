package queue

import (
	"fmt"
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

// checkEntryID accepts a stream entry id as Redis prints one: "<ms>-<seq>".
func checkEntryID(id string) error {
	if _, _, ok := parseEntryID(id); !ok {
		return errInvalid("entry id %q is not <ms>-<seq>", id)
	}
	return nil
}

func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}
