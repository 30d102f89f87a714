package fingerprint_test

import (
	"testing"

	"github.com/hopper-queue/hopper/fingerprint"
)

func TestSuiteIDIgnoresUnitsAndRevision(t *testing.T) {
	a := fingerprint.SuiteID(fingerprint.Inputs{UnitIDs: []string{"a"}, UnitType: "package", Command: "go test {unit}", Revision: "r1"})
	b := fingerprint.SuiteID(fingerprint.Inputs{UnitIDs: []string{"b", "a"}, UnitType: "package", Command: "go test {unit}", Revision: "r2"})
	if a != b || len(a) != fingerprint.SuiteIDLen {
		t.Errorf("same command and unit type: got %q and %q, want one id of %d digits", a, b, fingerprint.SuiteIDLen)
	}
	for _, other := range []fingerprint.Inputs{
		{UnitType: "file", Command: "go test {unit}"},
		{UnitType: "package", Command: "go test -race {unit}"},
	} {
		if fingerprint.SuiteID(other) == a {
			t.Errorf("%+v has the same suite id as another suite", other)
		}
	}
}
