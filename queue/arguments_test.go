package queue

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckIDs(t *testing.T) {
	bad := map[string]string{
		"empty":     "",
		"oversized": strings.Repeat("x", MaxIDBytes+1),
		"not UTF-8": "w\xff",
	}
	for name, id := range bad {
		if err := checkID("worker id", id); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
	}
	for _, id := range []string{"a{b}", "x}", "{"} {
		if err := checkBuildID(id); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), id) {
			t.Errorf("build id %q: got %v, want ErrInvalidArgument naming it", id, err)
		}
		if err := checkID("unit id", id); err != nil {
			t.Errorf("unit id %q refused: %v", id, err)
		}
	}
	if err := checkEntryID("12-x"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("entry id 12-x: got %v", err)
	}
}

// Redis reads every one of these as some canonical id, but the guard key
// would be named after the spelling: each must be refused, naming it.
func TestCheckEntryIDCanonical(t *testing.T) {
	for _, id := range []string{
		"01-0", "1-00", "00-0", "0-00", "+1-0", "1-+0", "-1-0", "1--0", " 1-0", "1-0 ", "1",
		"1-", "-0", "", "0x1-0", "1_0-0", "1-0-0", "18446744073709551616-0", "1-18446744073709551616", "٣-0",
	} {
		err := checkEntryID(id)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), fmt.Sprintf("%q", id)) {
			t.Errorf("entry id %q: got %v, want ErrInvalidArgument naming it", id, err)
		}
	}
	for _, id := range []string{"0-0", "0-1", "1-0", "10-0", "1700000000000-42", "18446744073709551615-18446744073709551615"} {
		if err := checkEntryID(id); err != nil {
			t.Errorf("entry id %q refused: %v", id, err)
		}
	}
}

func TestNextEntryID(t *testing.T) {
	cases := []struct {
		last string
		now  int64
		want string
	}{
		{"0-0", 1700, "1700-0"},
		{"1700-0", 1700, "1700-1"},
		{"1700-5", 1699, "1700-6"}, // a clock behind the tail never goes back
		{"1700-18446744073709551615", 1700, "1701-0"},
		{"garbage", 5, "5-0"},
	}
	for _, c := range cases {
		if got := nextEntryID(c.last, c.now); got != c.want {
			t.Errorf("nextEntryID(%q, %d): got %s, want %s", c.last, c.now, got, c.want)
		}
	}
}
