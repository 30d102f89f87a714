package queue

import (
	"strings"
	"testing"
)

// A suite's command is kept in meta, so that a worker whose suite differs
// can say how; one too long to keep, or not UTF-8, is left out, never
// refused: it is informational.
func TestManifestKeepsItsCommand(t *testing.T) {
	for _, tc := range []struct {
		name, command string
		kept          bool
	}{
		{"a command", "go test -race {unit}", true},
		{"none", "", false},
		{"too long", strings.Repeat("x", maxCommandBytes+1), false},
		{"not UTF-8", "go test \xff", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Manifest{UnitIDs: []string{"u1"}, Command: tc.command}.metaFields()
			got, ok := f[metaCommand]
			if ok != tc.kept || ok && got != tc.command {
				t.Fatalf("meta's command %q (present %v), want present %v", got, ok, tc.kept)
			}
			pm, err := ParseMeta(withState(f))
			if err != nil {
				t.Fatal(err)
			}
			m, err := parseManifest(pm)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: tc.command}[tc.kept]; m.Command != want {
				t.Errorf("read back %q, want %q", m.Command, want)
			}
		})
	}
}

// withState is f as Publish leaves meta: ready, with its counters.
func withState(f map[string]string) map[string]string {
	f[metaState], f[metaReadyAt], f[metaFinalized], f[metaRequeuedUnits] = stateReady, "1", "0", "0"
	return f
}
