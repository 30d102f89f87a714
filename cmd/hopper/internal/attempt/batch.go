package attempt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/testresults"
	"github.com/hopper-queue/hopper/worker"
)

// UnitsPlaceholder, an argument of its own, becomes the ids of a batch's
// units, one argument each.
const UnitsPlaceholder = "{units}"

// BatchArgv returns the command line of one attempt at units.
func (c *Command) BatchArgv(units []string) []string {
	var argv []string
	for _, a := range c.Args {
		if a == UnitsPlaceholder {
			argv = append(argv, units...)
		} else {
			argv = append(argv, a)
		}
	}
	return argv
}

// BatchFunc returns the worker.BatchFunc that runs c once for a batch of
// units (see docs/design.md#batches), with HOPPER_UNITS (the ids, one a
// line) and HOPPER_JUNIT (a file the command may write its JUnit report
// to) in its environment. Each unit's outcome comes from what the command
// reported: `go test -json` events on its output, else the JUnit file.
// A unit the report does not name, or every unit of a failed batch that
// reported nothing per unit, is run again alone, so that one failure never
// fails its neighbours. A JUnit file that does not parse fails the attempt
// of every unit of the batch, saying so; nothing passes by it.
func (c *Command) BatchFunc() worker.BatchFunc {
	return func(ctx context.Context, rs []queue.Reservation) []worker.Result {
		units := make([]string, len(rs))
		for i, r := range rs {
			units[i] = r.UnitID
		}
		junit, cleanup, err := junitPath()
		if err != nil {
			return c.sameForAll(rs, nil, Outcome{ExitCode: -1, StartErr: err})
		}
		defer cleanup()
		argv := c.BatchArgv(units)
		out, o := c.run(ctx, argv, c.environWith([][2]string{
			{"HOPPER_UNIT", strings.Join(units, "\n")}, {"HOPPER_UNITS", strings.Join(units, "\n")}, {JUnitEnv, junit},
		}))
		if o.Cancelled || o.Signal != 0 || o.StartErr != nil {
			return c.sameForAll(rs, out, o)
		}
		reported, err := c.reported(out, junit, units)
		if err != nil {
			o.ReportErr = err // the retry budget decides, as for any failure
			return c.sameForAll(rs, out, o)
		}
		return c.attribute(ctx, rs, argv, out, o, reported)
	}
}

// unitReport is what a batch's command reported of one of its units.
type unitReport struct {
	status   testresults.Status // Passed, Failed or Skipped
	duration time.Duration      // zero when not reported
	// output is the unit's own part of the output, when the report
	// carries it (go test -json); nil otherwise.
	output []byte
	tests  []testresults.Case
}

func (u unitReport) passed() bool { return u.status != testresults.Failed }

// reported reads the per-unit outcomes a batch's command gave: its go test
// -json events, else its JUnit file. nil: it gave none.
func (c *Command) reported(out []byte, junit string, units []string) (map[string]unitReport, error) {
	if rep, _ := testresults.ReadGoTestJSON(bytes.NewReader(out)); rep.Found() {
		return goTestUnits(rep, units), nil
	}
	cases, found, err := readJUnit(junit)
	switch {
	case errors.Is(err, testresults.ErrNotJUnit):
		return nil, fmt.Errorf("the JUnit file at $%s does not parse: %w", JUnitEnv, err)
	case err != nil:
		return nil, fmt.Errorf("the JUnit file at $%s (%s) cannot be read: %w", JUnitEnv, junit, err)
	case !found:
		return nil, nil
	}
	return junitUnits(cases, units), nil
}

// goTestUnits: a unit is reported once its package ended, with its
// package's status, elapsed time and output, and its tests.
func goTestUnits(rep testresults.GoTestReport, units []string) map[string]unitReport {
	ends, _ := testresults.Assign(rep.Packages, units)
	tests, _ := testresults.Assign(rep.Cases, units)
	per := make(map[string]unitReport, len(ends))
	for unit, cs := range ends {
		u := unitReport{status: testresults.Outcome(cs), output: []byte{}, tests: tests[unit]}
		for _, end := range cs {
			u.duration += end.Duration
			u.output = append(u.output, end.Output...)
		}
		per[unit] = u
	}
	return per
}

// junitUnits: a unit is reported when it has testcases, failed if any
// failed, in the sum of their times.
func junitUnits(cases []testresults.Case, units []string) map[string]unitReport {
	byUnit, _ := testresults.Assign(cases, units)
	per := make(map[string]unitReport, len(byUnit))
	for unit, cs := range byUnit {
		u := unitReport{status: testresults.Outcome(cs), tests: cs}
		for _, tc := range cs {
			u.duration += tc.Duration
		}
		per[unit] = u
	}
	return per
}

// attribute turns a batch that ran to its end into one result per unit:
// what the command reported of each, or for a unit it did not report on
// (every unit, when it reported nothing and failed), a run of that unit
// alone. With no report and exit 0, every unit passed.
func (c *Command) attribute(ctx context.Context, rs []queue.Reservation, argv []string, out []byte, o Outcome, reported map[string]unitReport) []worker.Result {
	anyFailed := false
	for _, u := range reported {
		anyFailed = anyFailed || !u.passed()
	}
	if o.Passed() && len(reported) == 0 {
		return c.sameForAll(rs, out, o)
	}
	if !o.Passed() && !anyFailed {
		reported = nil // the failure is nobody's in particular: each runs alone
	}
	res := make([]worker.Result, len(rs))
	share := o.Duration / time.Duration(len(rs))
	for i, r := range rs {
		u, ok := reported[r.UnitID]
		switch {
		case ok:
			res[i] = c.reportedResult(r, argv, out, u, share)
		case len(rs) == 1:
			res[i] = c.result(r, out, o)
		default:
			unitOut, unitO, tests := c.runTests(ctx, c.BatchArgv([]string{r.UnitID}), [][2]string{
				{"HOPPER_UNIT", r.UnitID}, {"HOPPER_UNITS", r.UnitID},
			})
			res[i] = c.testsResult(r, unitOut, unitO, tests)
		}
	}
	return res
}

// reportedResult is the result of a unit as the batch's report gave it,
// with its tests.
func (c *Command) reportedResult(r queue.Reservation, argv []string, batchOut []byte, u unitReport, share time.Duration) worker.Result {
	d := u.duration
	if d <= 0 {
		d = share
	}
	o := Outcome{ExitCode: 0, Duration: d}
	if !u.passed() {
		o.ExitCode = 1
	}
	out := u.output
	switch {
	case out == nil:
		out = batchOut
	case u.passed():
		out = lastLine(out) // go test -json is verbose: a pass needs its "ok" line alone
	}
	res := worker.Result{Outcome: worker.Passed, Duration: d, Tests: u.tests}
	if !u.passed() {
		res.Outcome = worker.Failed
		for _, tc := range u.tests {
			if tc.Failed() {
				res.Errors = append(res.Errors, events.ErrorEntry{
					ExampleID: tc.Label(), Description: Quote(argv), Class: "failed", Message: failedCaseMessage(tc, out), Backtrace: []string{},
				})
			}
		}
		if len(res.Errors) == 0 {
			res.Errors = []events.ErrorEntry{ErrorEntry(r.UnitID, argv, o, out)}
		}
	}
	if c.Header != nil {
		out = append([]byte(c.Header(r, o)), out...)
	}
	res.Output = out
	return res
}

// failedCaseMessage says why a failed test of a batch failed: its own
// message, unless that is only its status, else the tail of what it
// printed, else of its unit's output (always, for a failure of the unit as
// a whole: a build error, a panic outside any test).
func failedCaseMessage(tc testresults.Case, unitOut []byte) string {
	switch {
	case tc.Name != "" && tc.Message != "" && tc.Message != string(tc.Status):
		return tc.Message
	case tc.Name != "" && strings.TrimSpace(tc.Output) != "":
		return Tail([]byte(tc.Output), events.MaxMessageBytes)
	}
	return Tail(unitOut, events.MaxMessageBytes)
}

// sameForAll gives every unit of the batch the result of the whole run:
// the output is shown once, with the first unit.
func (c *Command) sameForAll(rs []queue.Reservation, out []byte, o Outcome) []worker.Result {
	res := make([]worker.Result, len(rs))
	for i, r := range rs {
		unitOut := out
		if i > 0 {
			unitOut = nil
		}
		res[i] = c.result(r, unitOut, o)
		if i > 0 && !o.Passed() {
			res[i].Errors = []events.ErrorEntry{ErrorEntry(r.UnitID, c.Argv(r.UnitID), o, out)}
		}
	}
	return res
}

// junitPath is a path, in a new temporary folder, where a batch's command
// may write its JUnit report; cleanup removes the folder.
func junitPath() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "hopper-junit-")
	if err != nil {
		return "", nil, fmt.Errorf("no folder for $HOPPER_JUNIT: %w", err)
	}
	return filepath.Join(dir, "junit.xml"), func() { os.RemoveAll(dir) }, nil
}

// lastLine is the last line of out that is not blank, with its newline.
func lastLine(out []byte) []byte {
	lines := strings.Split(strings.TrimRight(string(out), " \t\r\n"), "\n")
	return []byte(lines[len(lines)-1] + "\n")
}
