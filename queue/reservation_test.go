package queue

import (
	"errors"
	"strings"
	"testing"
)

func TestEntryUnitCheck(t *testing.T) {
	r := Reservation{WorkerID: "w1", Stream: StreamUnits, EntryID: "5-0", UnitID: "u1", DeliveryCount: 1}
	cases := []struct {
		name  string
		entry entryFields
		want  string // "" when accepted, else part of the error
	}{
		{"the caller's unit", entryFields{exists: true, hasID: true, id: "u1"}, ""},
		{"another unit", entryFields{exists: true, hasID: true, id: "u2"}, `units entry 5-0 carries unit "u2", not unit "u1"`},
		{"an empty id field", entryFields{exists: true, hasID: true, id: ""}, `carries unit "", not unit "u1"`},
		{"no id field", entryFields{exists: true}, `units entry 5-0 names no unit (no id field), not unit "u1"`},
		{"deleted from the stream", entryFields{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := entryUnitCheck(r, held{entry: c.entry})
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInvalidArgument with %q", err, c.want)
			}
		})
	}
}
