package fingerprint_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"

	"github.com/hopper-queue/hopper/fingerprint"
)

var base = fingerprint.Inputs{
	UnitIDs:  []string{"./a", "./b/<c>&{d}"},
	UnitType: "package",
	Command:  "go test {unit}",
	Revision: "abc123",
}

func TestOfHashesCanonicalJSON(t *testing.T) {
	// Keys sorted, compact, not HTML-escaped.
	canonical := `{"command":"go test {unit}","revision":"abc123","unit_ids":["./a","./b/<c>&{d}"],"unit_type":"package"}`
	h := sha256.Sum256([]byte(canonical))
	got := fingerprint.Of(base)
	if want := hex.EncodeToString(h[:]); got.Sum != want {
		t.Errorf("Sum = %s, want %s (sha256 of %s)", got.Sum, want, canonical)
	}
	h = sha256.Sum256([]byte(`"go test {unit}"`))
	if want := hex.EncodeToString(h[:])[:fingerprint.DigestLen]; got.Inputs[fingerprint.InputCommand] != want {
		t.Errorf("command digest = %s, want %s", got.Inputs[fingerprint.InputCommand], want)
	}
	if len(got.Inputs) != 4 {
		t.Errorf("Inputs has %d digests, want 4: %v", len(got.Inputs), got.Inputs)
	}
}

func TestOfNilAndEmptyUnitsAgree(t *testing.T) {
	a := fingerprint.Of(fingerprint.Inputs{UnitType: "file"})
	b := fingerprint.Of(fingerprint.Inputs{UnitIDs: []string{}, UnitType: "file"})
	if a.Sum != b.Sum {
		t.Errorf("nil and empty unit ids hash differently: %s vs %s", a.Sum, b.Sum)
	}
}

func TestDiff(t *testing.T) {
	with := func(f func(*fingerprint.Inputs)) fingerprint.Fingerprint {
		in := base
		in.UnitIDs = slices.Clone(base.UnitIDs)
		f(&in)
		return fingerprint.Of(in)
	}
	tests := []struct {
		name  string
		other fingerprint.Fingerprint
		want  []string
	}{
		{"same inputs", with(func(*fingerprint.Inputs) {}), nil},
		{"units reordered", with(func(in *fingerprint.Inputs) { slices.Reverse(in.UnitIDs) }), []string{"unit_ids"}},
		{"unit added", with(func(in *fingerprint.Inputs) { in.UnitIDs = append(in.UnitIDs, "./e") }), []string{"unit_ids"}},
		{"unit type", with(func(in *fingerprint.Inputs) { in.UnitType = "file" }), []string{"unit_type"}},
		{"command", with(func(in *fingerprint.Inputs) { in.Command = "go test -race {unit}" }), []string{"command"}},
		{"revision", with(func(in *fingerprint.Inputs) { in.Revision = "def456" }), []string{"revision"}},
		{"command and revision", with(func(in *fingerprint.Inputs) {
			in.Command, in.Revision = "x", "y"
		}), []string{"command", "revision"}},
		{"digests missing", fingerprint.Fingerprint{Sum: "00"}, []string{"command", "revision", "unit_ids", "unit_type"}},
		{"sums differ, digests agree", fingerprint.Fingerprint{Sum: "00", Inputs: fingerprint.Of(base).Inputs}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fingerprint.Diff(fingerprint.Of(base), tt.other)
			if !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("Diff = %#v, want %#v", got, tt.want)
			}
			if back := fingerprint.Diff(tt.other, fingerprint.Of(base)); !slices.Equal(back, got) {
				t.Errorf("Diff is not symmetric: %v one way, %v the other", got, back)
			}
		})
	}
}

func TestIsZero(t *testing.T) {
	if !(fingerprint.Fingerprint{}).IsZero() {
		t.Error("zero Fingerprint: IsZero() = false, want true")
	}
	if fingerprint.Of(base).IsZero() {
		t.Error("Of(...).IsZero() = true, want false")
	}
}

func FuzzDiffNamesOnlyChangedInputs(f *testing.F) {
	f.Add("a", "b", "go test", "go test", "r1", "r1")
	f.Fuzz(func(t *testing.T, u1, u2, c1, c2, r1, r2 string) {
		a := fingerprint.Of(fingerprint.Inputs{UnitIDs: []string{u1}, Command: c1, Revision: r1})
		b := fingerprint.Of(fingerprint.Inputs{UnitIDs: []string{u2}, Command: c2, Revision: r2})
		for _, name := range fingerprint.Diff(a, b) {
			if name == fingerprint.InputUnitType {
				t.Fatalf("Diff names unit_type, which is the same on both sides")
			}
		}
		if (a.Sum == b.Sum) != (len(fingerprint.Diff(a, b)) == 0) {
			t.Fatalf("sums equal %v but Diff = %v", a.Sum == b.Sum, fingerprint.Diff(a, b))
		}
	})
}
