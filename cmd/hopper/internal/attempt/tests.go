package attempt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hopper-queue/hopper/testresults"
)

// JUnitEnv names the file an attempt's command may write its JUnit XML
// report to: a path of its own, in a folder hopper makes for the attempt
// and removes after it.
const JUnitEnv = "HOPPER_JUNIT"

// runTests runs one attempt and takes its per-test results: the JUnit
// file the command wrote to $HOPPER_JUNIT when there is one, else the go
// test -json events in its output, else none. A file that is not JUnit XML
// is said in the output and gives no results; the attempt's outcome is its
// exit status either way.
func (c *Command) runTests(ctx context.Context, unit string) ([]byte, Outcome, []testresults.Case) {
	dir, err := os.MkdirTemp("", "hopper-attempt-")
	if err != nil {
		out, o := c.run(ctx, c.Argv(unit), c.environ(unit))
		return out, o, goTestCases(out)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "junit.xml")
	out, o := c.run(ctx, c.Argv(unit), c.environWith([][2]string{{"HOPPER_UNIT", unit}, {JUnitEnv, path}}))
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return out, o, goTestCases(out)
	case err != nil:
		return append(out, fmt.Sprintf("hopper: cannot read $%s: %v\n", JUnitEnv, err)...), o, nil
	}
	defer f.Close()
	cases, err := testresults.ParseJUnit(f)
	if err != nil {
		return append(out, fmt.Sprintf("hopper: the file written to $%s gives no test results: %v\n", JUnitEnv, err)...), o, nil
	}
	return out, o, cases
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
