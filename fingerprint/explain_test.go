package fingerprint_test

import (
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/fingerprint"
)

// TestExplainNamesBothValues: each differing input is named with both
// sides' values, commands shortened (issue 43: a mismatch named the input
// and never showed the two commands).
func TestExplainNamesBothValues(t *testing.T) {
	here := fingerprint.Inputs{UnitIDs: []string{"./a", "./b", "./c"}, UnitType: "package", Command: "go test -race {unit}", Revision: "abc"}
	build := fingerprint.Inputs{UnitIDs: []string{"./a", "./d"}, UnitType: "file", Command: "go test {unit}", Revision: ""}
	got := fingerprint.Explain([]string{"command", "revision", "unit_ids", "unit_type", "seed"}, here, build, true)
	want := []string{
		"command: here `go test -race {unit}`, the build's `go test {unit}`",
		"revision: here abc, the build's (none)",
		"units: 3 here, 2 in the build; only here: ./b, ./c; only in the build: ./d",
		"unit type: here package, the build's file",
		"seed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = fingerprint.Explain([]string{"command"}, here, build, false)
	if want := "command: here `go test -race {unit}`, the build's is not recorded in the build's meta (only its digest)"; got[0] != want {
		t.Errorf("got %q, want %q", got[0], want)
	}
	got = fingerprint.Explain([]string{"unit_ids"}, fingerprint.Inputs{UnitIDs: []string{"b", "a"}}, fingerprint.Inputs{UnitIDs: []string{"a", "b"}}, true)
	if want := "units: 2 here, 2 in the build; the same units in another order"; got[0] != want {
		t.Errorf("got %q, want %q", got[0], want)
	}
}

func TestShortCommand(t *testing.T) {
	long := "bundle exec rspec --require spec_helper --format progress --format RspecJunitFormatter --out tmp/junit.xml {unit}"
	got := fingerprint.ShortCommand(long)
	if n := len([]rune(got)); n > 60 {
		t.Errorf("%q is %d runes, over 60", got, n)
	}
	if !strings.HasPrefix(got, "bundle exec rspec") || !strings.HasSuffix(got, "junit.xml {unit}") || !strings.Contains(got, "…") {
		t.Errorf("got %q: the program and the tail are kept, the middle cut", got)
	}
	if got := fingerprint.ShortCommand("go  test\n{unit}"); got != "go test {unit}" {
		t.Errorf("got %q", got)
	}
}
