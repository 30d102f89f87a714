package testresults

import "time"

// Status is a test's outcome.
type Status string

// The outcomes a test can have. A test that started and never reported an
// end (its binary crashed or was killed) is Failed.
const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)

// Case is one test's result.
type Case struct {
	// Unit names what ran the test as the command saw it: the package for
	// go test -json, the file (else the classname) for JUnit. It may differ
	// in form from hopper's unit id ("./api" and "example.com/m/api"); see
	// Assign.
	Unit string `json:"unit"`
	// Suite is the test's suite: the package, or the JUnit <testsuite> name.
	Suite string `json:"suite,omitempty"`
	// Name is the test's name; empty for a result of the unit as a whole
	// (a package that failed outside any test: a build error, a panic in
	// TestMain).
	Name     string        `json:"name"`
	Status   Status        `json:"status"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Message is one line saying why the test failed or was skipped.
	Message string `json:"message,omitempty"`
	// Output is what the test printed (for JUnit, the failure's text and
	// the case's system-out and system-err).
	Output string `json:"output,omitempty"`
	// names are the names the report gave the case's unit, in the order
	// Assign tries them (JUnit's testcase file, classname, then suite file
	// and name); empty when Unit is the one name (go test -json, or a
	// Case decoded or made by hand).
	names [4]string
}

// Failed reports whether the case failed.
func (c Case) Failed() bool { return c.Status == Failed }

// Label names the case for people: its Name, or its Unit for the result
// of the unit as a whole.
func (c Case) Label() string {
	if c.Name == "" {
		return c.Unit
	}
	return c.Name
}
