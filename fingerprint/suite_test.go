package fingerprint_test

import (
	"testing"

	"github.com/hopper-queue/hopper/fingerprint"
)

func TestSuiteIDIgnoresUnitsAndRevision(t *testing.T) {
	a := fingerprint.SuiteID("", fingerprint.Inputs{UnitIDs: []string{"a"}, UnitType: "package", Command: "go test {unit}", Revision: "r1"})
	b := fingerprint.SuiteID("", fingerprint.Inputs{UnitIDs: []string{"b", "a"}, UnitType: "package", Command: "go test {unit}", Revision: "r2"})
	if a != b || len(a) != fingerprint.SuiteIDLen {
		t.Errorf("same command and unit type: got %q and %q, want one id of %d digits", a, b, fingerprint.SuiteIDLen)
	}
	for _, other := range []fingerprint.Inputs{
		{UnitType: "file", Command: "go test {unit}"},
		{UnitType: "package", Command: "go test -race {unit}"},
	} {
		if fingerprint.SuiteID("", other) == a {
			t.Errorf("%+v has the same suite id as another suite", other)
		}
	}
}

// TestSuiteIDKeepsProjectsApart: two projects running the same command
// over the same unit type are two suites (issue 43: two modules shared
// one timings file and one Redis key).
func TestSuiteIDKeepsProjectsApart(t *testing.T) {
	in := fingerprint.Inputs{UnitType: "package", Command: "go test {unit}"}
	a := fingerprint.SuiteID("go module example.com/a", in)
	b := fingerprint.SuiteID("go module example.com/b", in)
	if a == b {
		t.Errorf("two modules share the suite id %s", a)
	}
	if a != fingerprint.SuiteID("go module example.com/a", in) {
		t.Error("one project's suite id changed between calls")
	}
}
