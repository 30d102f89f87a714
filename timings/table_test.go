package timings_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/timings"
)

func TestTableRoundTrip(t *testing.T) {
	in := timings.Table{"./api": 1500 * time.Millisecond, "spec/a b_spec.rb": 2*time.Second + 250*time.Microsecond, "z": 0}
	b := in.Encode()
	got, err := timings.Decode(b)
	if err != nil {
		t.Fatalf("Decode(%s): %v", b, err)
	}
	if len(got) != len(in) {
		t.Fatalf("got %v, want %v", got, in)
	}
	for u, d := range in {
		if got[u] != d {
			t.Errorf("%s: got %v, want %v", u, got[u], d)
		}
	}
}

func TestDecodeRefusesCorruptContent(t *testing.T) {
	for _, raw := range []string{
		``, `not json`, `[]`, `{"version":2,"units":{}}`, `{"units":{"a":1}}`,
		`{"version":1,"units":{"a":-1}}`, `{"version":1,"units":{"a":"1"}}`,
		`{"version":1,"units":{"":1}}`, `{"version":1,"units":{"a":1e300}}`,
		`{"version":1,"units":{}} {}`, "\x00\x01",
	} {
		if got, err := timings.Decode([]byte(raw)); !errors.Is(err, timings.ErrCorrupt) {
			t.Errorf("Decode(%q) = %v, %v; want ErrCorrupt", raw, got, err)
		}
	}
}

func TestMerge(t *testing.T) {
	old := timings.Table{"a": time.Second, "b": 2 * time.Second}
	got := timings.Merge(old, timings.Table{"b": 5 * time.Second, "c": 3 * time.Second})
	want := timings.Table{"a": time.Second, "b": 5 * time.Second, "c": 3 * time.Second}
	if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] || got["c"] != want["c"] {
		t.Errorf("got %v, want %v", got, want)
	}
	if old["b"] != 2*time.Second {
		t.Errorf("old was modified: %v", old)
	}
}
