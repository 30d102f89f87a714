package gorun

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/attempt"
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/testresults"
	"github.com/hopper-queue/hopper/timings"
	"github.com/hopper-queue/hopper/worker"
)

// Unit is what one unit id runs: a package, or a shard of its top-level
// tests.
type Unit struct {
	ID      string
	Package Package
	// Tests are a shard's top-level tests; nil for the whole package.
	Tests []string
}

// Runner runs the units of a Go-native build. It is safe for concurrent
// use by the worker slots of one process.
type Runner struct {
	Args      Args
	Test2JSON string // the test2json command (go tool -n test2json)
	Compiler  *Compiler
	Units     map[string]Unit
	// Supervisor stops and kills the running binaries with the slots.
	Supervisor *attempt.Supervisor
	BuildID    string
	// Earlier, when set, reads the cases of a unit's latest settled
	// attempt from the build, for a retry whose failed attempt ran in
	// another process.
	Earlier func(ctx context.Context, unit string) ([]testresults.Case, bool)
	// Measured, when set, is given each top-level test's duration on a
	// unit's first attempt, keyed by TestKey.
	Measured func(key string, d time.Duration)

	mu   sync.Mutex
	last map[string][]testresults.Case // each unit's latest attempt here
}

// TestKey names a top-level test in the suite's timings, beside the
// units: no import path holds a '#'.
func TestKey(pkg, test string) string { return pkg + "#" + test }

// Func is the worker.Func of one slot.
func (r *Runner) Func(workerID string, slot int, header func(queue.Reservation, attempt.Outcome) string) worker.Func {
	return func(ctx context.Context, res queue.Reservation) worker.Result {
		u, ok := r.Units[res.UnitID]
		if !ok {
			return worker.Result{Outcome: worker.Failed, NoRequeue: true, Errors: []events.ErrorEntry{{
				ExampleID: res.UnitID, Class: "unknown unit", Backtrace: []string{},
				Message: "this worker's packages do not include " + res.UnitID,
			}}}
		}
		a := r.attempt(ctx, u, res)
		r.remember(res.UnitID, a.cases)
		if res.RetryIndex == 0 && res.ReclaimCount == 0 {
			r.measure(u, a.cases)
		}
		result := a.result(u, attempt.Quote(r.Args.Command()))
		if header != nil {
			result.Output = append([]byte(header(res, a.outcome)), result.Output...)
		}
		return result
	}
}

// ran is one attempt at a unit.
type ran struct {
	out     []byte
	outcome attempt.Outcome
	cases   []testresults.Case
	argv    []string
	build   bool // failed to compile
}

// attempt compiles (or finds) the unit's binary and runs what this
// attempt is to run of it.
func (r *Runner) attempt(ctx context.Context, u Unit, res queue.Reservation) ran {
	pkg := u.Package.ImportPath
	start := time.Now()
	bin, failed, err := r.Compiler.Binary(ctx, u.Package)
	if err == nil && failed == "" {
		start = time.Now() // the unit's time is its run's: compiles overlap the runs
	}
	switch {
	case err != nil:
		o := attempt.Outcome{ExitCode: -1, StartErr: err, Cancelled: ctx.Err() != nil, Duration: time.Since(start)}
		return ran{out: fmt.Appendf(nil, "hopper: cannot build %s: %v\n", pkg, err), outcome: o}
	case failed != "":
		o := attempt.Outcome{ExitCode: 1, Duration: time.Since(start)}
		out := fmt.Appendf([]byte(failed), "FAIL\t%s [build failed]\n", pkg)
		c := testresults.Case{Unit: pkg, Suite: pkg, Status: testresults.Failed, Message: "build failed", Output: failed}
		return ran{out: out, outcome: o, cases: []testresults.Case{c}, build: true}
	}
	tests, kept := u.Tests, []testresults.Case(nil)
	if res.RetryIndex > 0 {
		if rr, ok := r.rerun(ctx, res.UnitID); ok && rr.Tests != nil {
			tests, kept = rr.Tests, rr.Kept
		}
	}
	argv := r.argv(bin, pkg, tests)
	// The binary gets the process's environment, as under go test, and
	// the HOPPER_* variables of any attempt.
	cmd := &attempt.Command{Args: argv, Dir: u.Package.Dir, BuildID: r.BuildID, WorkerID: res.WorkerID,
		Supervisor: r.Supervisor}
	events, o := cmd.Run(ctx, res.UnitID)
	rep, _ := testresults.ReadGoTestJSON(bytes.NewReader(events))
	cases := rep.Cases
	if !o.Passed() && !o.Cancelled {
		if c, ok := outsideTests(pkg, cases, o.ExitCode, o.Status()); ok {
			c.Output = attempt.Tail(consoleText(events, pkg, false, true, o.Duration), 4<<10)
			cases = append(cases, c)
		}
	}
	o.Duration = time.Since(start)
	out := consoleText(events, pkg, o.Passed(), r.Args.Verbose, o.Duration)
	if len(kept) > 0 {
		out = fmt.Appendf(out, "hopper: ran again only %s; the other tests' results stand\n", strings.Join(tests, ", "))
	}
	return ran{out: out, outcome: o, cases: append(kept, cases...), argv: argv}
}

// argv is the command line of one run: test2json around the binary, with
// the flags go test would give it, and a -test.run of tests (nil: the
// user's -run, if any).
func (r *Runner) argv(bin, pkg string, tests []string) []string {
	argv := []string{r.Test2JSON, "-t", "-p", pkg, bin, "-test.v=test2json", "-test.paniconexit0"}
	argv = append(argv, r.Args.Test...)
	switch {
	case tests != nil:
		argv = append(argv, "-test.run="+runPattern(tests))
	case r.Args.Run != "":
		argv = append(argv, "-test.run="+r.Args.Run)
	}
	return argv
}

// rerun is what the retry of unit runs, from its latest attempt in this
// process, else in the build.
func (r *Runner) rerun(ctx context.Context, unit string) (rerun, bool) {
	r.mu.Lock()
	cases, ok := r.last[unit]
	r.mu.Unlock()
	if !ok && r.Earlier != nil {
		cases, ok = r.Earlier(ctx, unit)
	}
	if !ok || r.Args.FailFast || !refinable(r.Args.Run) {
		// Under -failfast the tests after a failure never ran; a -run
		// with subtest levels would be widened by a list of tests.
		return rerun{}, false
	}
	return rerunOf(cases), true
}

func (r *Runner) remember(unit string, cases []testresults.Case) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string][]testresults.Case{}
	}
	r.last[unit] = cases
}

// measure gives the top-level tests' durations to Measured.
func (r *Runner) measure(u Unit, cases []testresults.Case) {
	if r.Measured == nil {
		return
	}
	for _, c := range cases {
		key := TestKey(u.Package.ImportPath, c.Name)
		// A key the table cannot hold would make it unreadable.
		if c.Name != "" && !strings.Contains(c.Name, "/") && c.Status != testresults.Skipped && len(key) <= timings.MaxUnitBytes {
			r.Measured(key, c.Duration)
		}
	}
}
