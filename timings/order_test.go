package timings_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/timings"
)

func TestLongestFirst(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name  string
		units []string
		known timings.Table
		want  []string
	}{
		{"nothing known keeps the given order", []string{"c", "a", "b"}, nil, []string{"c", "a", "b"}},
		{"known units longest first", []string{"a", "b", "c"},
			timings.Table{"a": 1 * s, "b": 3 * s, "c": 2 * s}, []string{"b", "c", "a"}},
		{"unknown units ahead of all known ones", []string{"a", "new1", "b", "new2"},
			timings.Table{"a": 1 * s, "b": 9 * s}, []string{"new1", "new2", "b", "a"}},
		{"ties keep the given order", []string{"x", "y", "z", "w"},
			timings.Table{"x": 2 * s, "y": 5 * s, "z": 2 * s, "w": 5 * s}, []string{"y", "w", "x", "z"}},
		{"units of the table not in the build are ignored", []string{"a", "b"},
			timings.Table{"gone": time.Hour, "a": s, "b": 2 * s}, []string{"b", "a"}},
		{"zero durations are known", []string{"n", "z"},
			timings.Table{"z": 0}, []string{"n", "z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.units)
			got := timings.LongestFirst(tc.units, tc.known)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if !slices.Equal(tc.units, in) {
				t.Errorf("the given units were modified: %q", tc.units)
			}
		})
	}
}
