package attempt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/testresults"
	"github.com/hopper-queue/hopper/worker"
)

// JUnitEnv names the file an attempt's command may write its JUnit XML
// report to: a path of its own, in a folder hopper makes for the attempt
// and removes after it.
const JUnitEnv = "HOPPER_JUNIT"

// runTests runs one attempt of argv, with vars and $HOPPER_JUNIT set, and
// takes its per-test results: the JUnit file the command wrote to
// $HOPPER_JUNIT when there is one, else the go test -json events in its
// output, else none. A file that is not JUnit XML is said in the output
// and gives no results; the attempt's outcome is its exit status either
// way.
func (c *Command) runTests(ctx context.Context, argv []string, vars [][2]string) ([]byte, Outcome, []testresults.Case) {
	path, cleanup, err := junitPath()
	if err != nil {
		out, o := c.run(ctx, argv, c.environWith(vars))
		return out, o, goTestCases(out)
	}
	defer cleanup()
	out, o := c.run(ctx, argv, c.environWith(append(vars, [2]string{JUnitEnv, path})))
	cases, found, err := readJUnit(path)
	switch {
	case errors.Is(err, testresults.ErrNotJUnit):
		return append(out, fmt.Sprintf("hopper: the file written to $%s gives no test results: %v\n", JUnitEnv, err)...), o, nil
	case err != nil:
		return append(out, fmt.Sprintf("hopper: cannot read $%s: %v\n", JUnitEnv, err)...), o, nil
	case !found:
		return out, o, goTestCases(out)
	}
	return out, o, cases
}

// readJUnit reads the JUnit file an attempt's command wrote at path.
// found is false when it wrote none; an error wrapping
// testresults.ErrNotJUnit says the file is not JUnit XML.
func readJUnit(path string) (cases []testresults.Case, found bool, err error) {
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	defer f.Close()
	cases, err = testresults.ParseJUnit(f)
	return cases, true, err
}

// testsResult is the result of an attempt that gave tests: its failed
// tests, with their messages, make a better error message than the tail
// of output that is machine-readable events.
func (c *Command) testsResult(r queue.Reservation, out []byte, o Outcome, tests []testresults.Case) worker.Result {
	res := c.result(r, out, o)
	res.Tests = tests
	if msg := failedTestsMessage(tests, events.MaxMessageBytes); msg != "" && len(res.Errors) == 1 {
		res.Errors[0].Message = msg
	}
	return res
}

// goTestCases reads go test -json events from an attempt's output; the
// parser skips every other line. Reading memory cannot fail.
func goTestCases(out []byte) []testresults.Case {
	cases, _ := testresults.ParseGoTestJSON(bytes.NewReader(out))
	return cases
}

// failedTestsMessage is the failed tests, one line each with its message,
// cut to limit: a better error message for a failed unit than the tail of
// output that is machine-readable events. "" when no test failed.
func failedTestsMessage(cases []testresults.Case, limit int) string {
	var b strings.Builder
	for _, c := range cases {
		if c.Failed() {
			fmt.Fprintf(&b, "%s: %s\n", c.Label(), c.Message)
		}
	}
	return Tail([]byte(b.String()), limit)
}
