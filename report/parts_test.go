package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Two shards' suites make their package's: every case, the counts summed,
// the longer time (they ran side by side).
func TestMergeSuites(t *testing.T) {
	a := junitSuite{Name: "m/p", Tests: 2, Failures: 1, Time: "3.000", Cases: []junitCase{{Name: "TestA"}, {Name: "TestB"}}}
	b := junitSuite{Name: "m/p", Tests: 1, Skipped: 1, Time: "4.500", Cases: []junitCase{{Name: "TestC"}}}
	got := mergeSuites(a, b)
	assert.Equal(t, 3, got.Tests)
	assert.Equal(t, 1, got.Failures)
	assert.Equal(t, 1, got.Skipped)
	assert.Equal(t, "4.500", got.Time)
	assert.Equal(t, []junitCase{{Name: "TestA"}, {Name: "TestB"}, {Name: "TestC"}}, got.Cases)
}

func TestWholes(t *testing.T) {
	partOf := func(unitType, unit string) string {
		if unitType != "go-package" {
			return ""
		}
		p, _, _ := strings.Cut(unit, " ")
		return p
	}
	r := &Report{Manifest: []string{"m/a -run ^(TestX)$", "m/b", "m/a -run ^(TestY)$"}}
	r.partOf = Options{PartOf: partOf}.partOf(&Meta{UnitType: "go-package"})
	assert.Equal(t, []string{"m/a", "m/b"}, r.wholes())
	assert.Equal(t, "m/a", r.whole("m/a -run ^(TestY)$"))

	r.partOf = Options{PartOf: partOf}.partOf(&Meta{UnitType: "file"})
	assert.Equal(t, "m/a -run ^(TestX)$", r.whole("m/a -run ^(TestX)$"), "another unit type: each unit its own")
	assert.Nil(t, Options{}.partOf(&Meta{UnitType: "go-package"}))
}
