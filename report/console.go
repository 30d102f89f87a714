package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriteConsole writes the report for people reading a CI log:
//
//	report: build <id>: <verdict>
//	  <headline>
//	  units: <n> total, <n> finalized[; tests: <n>, <n> failed]
//	  <one line per detail>
//	  flaky (passed after requeue): <unit>, <unit>
//	  abandoned (exceeded --max-unit-duration): <unit>
//	  worker error: <worker> <phase> <class>: <message>
//
// The flaky, abandoned and worker-error lines appear only when there is
// something to list, and only for a build with a manifest. Messages are cut
// to their first line so each entry stays one line. It returns the first
// write error.
func (r *Report) WriteConsole(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "report: build %s: %s\n", r.BuildID, r.Verdict)
	fmt.Fprintf(bw, "  %s\n", r.Headline)
	fmt.Fprintf(bw, "  units: %s\n", r.unitsLine())
	for _, d := range r.Details {
		fmt.Fprintf(bw, "  %s\n", d)
	}
	for _, line := range r.roundLines() {
		fmt.Fprintf(bw, "  %s\n", line)
	}
	for _, f := range r.log().Failed() {
		if round := r.roundOf(f.UnitID); r.Rounds > 1 {
			fmt.Fprintf(bw, "  %s: result of round %d\n", f.UnitID, round)
		}
	}
	failedTests := r.FailedTests()
	for _, u := range r.wholes() {
		if names := failedTests[u]; len(names) > 0 {
			fmt.Fprintf(bw, "  failed tests of %s: %s\n", u, strings.Join(names, ", "))
		}
	}
	if r.Meta != nil {
		if flaky := r.log().Flaky(); len(flaky) > 0 {
			fmt.Fprintf(bw, "  flaky (passed after requeue): %s\n", strings.Join(flaky, ", "))
		}
		if abandoned := r.log().Abandoned(); len(abandoned) > 0 {
			fmt.Fprintf(bw, "  abandoned (exceeded --max-unit-duration): %s\n", strings.Join(abandoned, ", "))
		}
		for _, e := range r.log().WorkerErrors() {
			fmt.Fprintf(bw, "  worker error: %s %s %s: %s\n", e.WorkerID, e.Phase, e.Class, firstLine(e.Message))
		}
	}
	return bw.Flush()
}

// unitsLine is the totals the build reached, or that there is no manifest.
func (r *Report) unitsLine() string {
	if r.Meta == nil {
		return "unknown (no manifest)"
	}
	finalized := ""
	if r.FinalizedCount != nil {
		finalized = fmt.Sprintf(", %d finalized", *r.FinalizedCount)
	}
	return fmt.Sprintf("%d total%s%s", r.Meta.TotalUnits, finalized, r.countedLine())
}

// countedLine adds what the units held, when it is known: the tests their
// commands reported (go test -json, a JUnit file), else the examples the
// publisher counted. Neither known, nothing is added: the number of units
// is not a number of tests.
func (r *Report) countedLine() string {
	if total, failed, ok := r.TestCount(); ok {
		return fmt.Sprintf("; tests: %d, %d failed", total, failed)
	}
	if r.Meta.HasTotalExamples {
		return fmt.Sprintf("; examples: %d selected", r.Meta.TotalExamples)
	}
	return ""
}
