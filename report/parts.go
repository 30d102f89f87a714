package report

import (
	"fmt"
	"strconv"
)

// A build's units may be parts of a larger whole: the shards of one Go
// package under hopper's --go, each a unit with its own fence and
// settlement. The per-test results put them back together (see
// Options.PartOf); the units' own figures stay per unit.

// partOf is PartOf for the build's unit type; nil when none applies.
func (o Options) partOf(m *Meta) func(string) string {
	if o.PartOf == nil || m == nil {
		return nil
	}
	unitType := m.UnitType
	return func(u string) string { return o.PartOf(unitType, u) }
}

// whole is the unit unit is a part of, or unit itself.
func (r *Report) whole(unit string) string {
	if r.partOf == nil {
		return unit
	}
	if w := r.partOf(unit); w != "" {
		return w
	}
	return unit
}

// wholes are the report's units with the parts of one whole given once,
// in the order of their first part.
func (r *Report) wholes() []string {
	var out []string
	seen := map[string]bool{}
	for _, u := range r.junitUnits() {
		if w := r.whole(u); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// mergeSuites is the suite of a whole from two of its parts' suites: their
// cases, their counts summed, and the longer of their times (the parts
// ran side by side).
func mergeSuites(a, b junitSuite) junitSuite {
	a.Cases = append(a.Cases, b.Cases...)
	a.Tests, a.Failures, a.Errors, a.Skipped = a.Tests+b.Tests, a.Failures+b.Failures, a.Errors+b.Errors, a.Skipped+b.Skipped
	ta, _ := strconv.ParseFloat(a.Time, 64)
	tb, _ := strconv.ParseFloat(b.Time, 64)
	a.Time = fmt.Sprintf("%.3f", max(ta, tb))
	return a
}
