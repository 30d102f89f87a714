package report

import (
	"strings"

	"github.com/hopper-queue/hopper/testresults"
)

// A unit whose final attempt gave per-test results (see package
// testresults) has a <testsuite> of its own, named by the unit, with one
// <testcase> per test of that attempt: the form CI systems show test by
// test.
//
//   - classname is the test's suite (the Go package, the JUnit suite), else
//     the unit; time the test's own; the suite's time the unit's final
//     attempt's duration.
//   - A failed test has a <failure> with its message and output, a skipped
//     one <skipped>.
//   - Each failure of the test in an earlier attempt (a requeue) is a
//     <flakyFailure> when the test passed in the end, a <rerunFailure>
//     when it failed again: the elements Surefire writes for reruns, which
//     Jenkins and GitLab read.
//   - A unit that failed though none of its tests did (its command failed
//     outside them) gets one more case named by the unit with the unit's
//     failure, so that the suite is never greener than the unit.

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

type junitRerun struct {
	Message    string `xml:"message,attr"`
	Type       string `xml:"type,attr"`
	StackTrace string `xml:"stackTrace,omitempty"`
	SystemOut  string `xml:"system-out,omitempty"`
}

// unitSuites returns the suites of the units with per-test results, in
// the order of junitUnits.
func (r *Report) unitSuites() []junitSuite {
	failed := make(map[string]FailedUnit)
	for _, f := range r.log().Failed() {
		failed[f.UnitID] = f
	}
	var suites []junitSuite
	at := map[string]int{} // a whole's suite, by name
	for _, u := range r.junitUnits() {
		ut := r.testsOf(u)
		if ut.final == nil {
			continue
		}
		ms, _ := r.log().lastDuration(u)
		s := junitSuite{Name: r.whole(u), Time: junitSeconds(ms)}
		for _, c := range ut.final {
			jc := testCase(u, c, ut.earlierFailures(c.Name))
			switch {
			case jc.Failure != nil:
				s.Failures++
			case jc.Skipped != nil:
				s.Skipped++
			}
			s.Cases = append(s.Cases, jc)
		}
		if f, ok := failed[u]; ok && s.Failures == 0 {
			s.Cases = append(s.Cases, junitCase{Name: u, Classname: u, Time: junitSeconds(ms), Failure: failureOf(f)})
			s.Failures++
		}
		s.Tests = len(s.Cases)
		if i, ok := at[s.Name]; ok {
			suites[i] = mergeSuites(suites[i], s)
			continue
		}
		at[s.Name] = len(suites)
		suites = append(suites, s)
	}
	return suites
}

// testCase is one test's case; earlier are its failures in the attempts
// before the final one.
func testCase(unit string, c testresults.Case, earlier []testresults.Case) junitCase {
	jc := junitCase{Name: c.Label(), Classname: c.Suite, Time: junitSeconds(float64(c.Duration.Microseconds()) / 1000)}
	if jc.Classname == "" {
		jc.Classname = unit
	}
	switch c.Status {
	case testresults.Failed:
		jc.Failure = &junitProblem{Message: c.Message, Type: "failed", Text: c.Output}
	case testresults.Skipped:
		jc.Skipped = &junitSkipped{Message: c.Message}
	}
	for _, e := range earlier {
		rerun := junitRerun{Message: e.Message, Type: "failed", StackTrace: strings.TrimSpace(e.Output)}
		if c.Status == testresults.Passed {
			jc.FlakyFailures = append(jc.FlakyFailures, rerun)
		} else {
			jc.RerunFailures = append(jc.RerunFailures, rerun)
		}
	}
	return jc
}
