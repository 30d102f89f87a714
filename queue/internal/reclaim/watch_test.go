package reclaim

import (
	"slices"
	"testing"
)

func guardOf(at string) string { return "g:" + at }

// Every entry ranged is watched, each guard once, after the first key.
func TestWatchSetWatchesWhatItRanges(t *testing.T) {
	w := NewWatchSet("wg", guardOf, true)
	w.Range("a")
	w.Watch("b")
	w.Watch("a")
	w.Range("b")
	if want := []string{"wg", "g:a", "g:b"}; !slices.Equal(w.Keys, want) {
		t.Errorf("keys %v, want %v", w.Keys, want)
	}
	if want := []string{"a", "b"}; !slices.Equal(w.Ranged, want) {
		t.Errorf("ranged %v, want %v", w.Ranged, want)
	}
	if !w.Covers([]string{"a", "b"}) {
		t.Error("the entries watched are not covered")
	}
	if w.Covers([]string{"a", "c"}) {
		t.Error("an entry not watched is covered")
	}
}

// Without entry guards nothing but the first key is watched, and every
// look is covered.
func TestWatchSetUnfenced(t *testing.T) {
	w := NewWatchSet("wg", guardOf, false)
	w.Range("a")
	w.Watch("b")
	if want := []string{"wg"}; !slices.Equal(w.Keys, want) {
		t.Errorf("keys %v, want %v", w.Keys, want)
	}
	if want := []string{"a"}; !slices.Equal(w.Ranged, want) {
		t.Errorf("ranged %v, want %v", w.Ranged, want)
	}
	if !w.Covers([]string{"c"}) {
		t.Error("an unfenced watch set does not cover")
	}
}
