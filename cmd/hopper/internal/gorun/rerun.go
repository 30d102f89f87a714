package gorun

import (
	"regexp"
	"slices"
	"strings"

	"github.com/hopper-queue/hopper/testresults"
)

// rerun is what the retry of a failed attempt runs: its failed top-level
// tests alone, the rest of its results standing; or, when the attempt
// failed outside any test, the whole unit again.
type rerun struct {
	// Tests are the top-level tests to run again; nil for the whole unit.
	Tests []string
	// Kept are the earlier attempt's cases of the tests not run again.
	Kept []testresults.Case
}

// rerunOf reads a failed attempt's cases. The whole unit runs again when
// a case of the package as a whole failed (a build failure, a panic in
// init or TestMain, a timeout, a crash: see outsideTests), when a test did
// not finish, or when no top-level test failed.
func rerunOf(cases []testresults.Case) rerun {
	var failed []string
	for _, c := range cases {
		if !c.Failed() {
			continue
		}
		if c.Name == "" || strings.Contains(c.Message, "did not finish") {
			return rerun{}
		}
		if top := topLevel(c.Name); !slices.Contains(failed, top) {
			failed = append(failed, top)
		}
	}
	if len(failed) == 0 {
		return rerun{}
	}
	r := rerun{Tests: failed}
	for _, c := range cases {
		if !slices.Contains(failed, topLevel(c.Name)) {
			r.Kept = append(r.Kept, c)
		}
	}
	return r
}

// runPattern is the -test.run of exactly the named top-level tests, each
// escaped and the whole anchored: no other test's name matches it.
func runPattern(tests []string) string {
	quoted := make([]string, len(tests))
	for i, t := range tests {
		quoted[i] = regexp.QuoteMeta(t)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// refinable reports whether a list of top-level tests can stand for the
// user's -run (or -run is empty): it names no subtest level, and it
// compiles. The tests it matches are then Matching's.
func refinable(run string) bool {
	if run == "" {
		return true
	}
	if strings.Contains(run, "/") {
		return false
	}
	_, err := regexp.Compile(run)
	return err == nil
}

// matching are the names the user's -run selects, in their order; all of
// them when run is empty. run must be refinable.
func matching(names []string, run string) []string {
	if run == "" {
		return names
	}
	re := regexp.MustCompile(run)
	var out []string
	for _, n := range names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	return out
}

// Selected are the names of names the user's -run selects, all of them
// when it has subtest levels or does not compile (the binary then says).
func (a Args) Selected(names []string) []string {
	if !refinable(a.Run) {
		return names
	}
	return matching(names, a.Run)
}

// outsideTests is the case of a package that failed outside any test: its
// binary exited otherwise than a test failure does (status 1), or it
// failed with no test failing.
func outsideTests(pkg string, cases []testresults.Case, exitCode int, status string) (testresults.Case, bool) {
	anyFailed := slices.ContainsFunc(cases, testresults.Case.Failed)
	if exitCode == 1 && anyFailed {
		return testresults.Case{}, false
	}
	if slices.ContainsFunc(cases, func(c testresults.Case) bool { return c.Failed() && c.Name == "" }) {
		return testresults.Case{}, false // the parser gave it already
	}
	return testresults.Case{Unit: pkg, Suite: pkg, Status: testresults.Failed,
		Message: "the test binary failed outside any test's end: " + status}, true
}
