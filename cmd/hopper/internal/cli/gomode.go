package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/gorun"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/testresults"
	"github.com/hopper-queue/hopper/timings"
	"github.com/redis/rueidis"
)

// goUnitType is --unit-type under --go, unless given.
const goUnitType = "package"

// goMode is a --go build's machinery (see docs/cli.md#go-native-runs).
type goMode struct {
	runner *gorun.Runner
	pkgs   []gorun.Package
	// ahead compiles every package's binary in the build's order while the
	// tests run: hopper run's one machine runs them all anyway.
	ahead bool
}

// unitsInput reads the units and the command after --: go test's, under
// --go, else the command template of every unit.
func (a *app) unitsInput(f *flagSet, wf workFlags, o *workOptions, positional, command []string) ([]string, error) {
	if !*wf.goNative {
		return a.suiteInput(o, positional, command)
	}
	return a.goSuiteInput(f, o, positional, command)
}

// goSuiteInput reads what follows -- under --go as go test's flags and
// packages, lists the packages with tests (they are the units), and sets
// up their runner. Nothing is published when the flags are refused or the
// patterns match no package with tests.
func (a *app) goSuiteInput(f *flagSet, o *workOptions, positional, command []string) ([]string, error) {
	switch {
	case len(positional) > 0:
		return nil, usagef("unexpected argument %q: with --go, packages go after --, as go test takes them", positional[0])
	case o.UnitsFrom != "":
		return nil, usagef("--units-from is not taken with --go: the units are the packages after --")
	case f.Given("batch"):
		return nil, usagef("--batch is not taken with --go: each worker slot runs one package's binary at a time")
	}
	args, err := gorun.ParseArgs(command)
	if err != nil {
		return nil, usagef("%v", err)
	}
	goTool := a.env["GO"]
	if goTool == "" {
		goTool = "go"
	}
	if _, err := exec.LookPath(goTool); err != nil {
		return nil, usagef("--go needs the go command: %v", err)
	}
	dir, err := os.Getwd()
	if err != nil {
		return nil, exitf(exitInfrastructure, "%v", err)
	}
	pkgs, err := gorun.List(a.ctx, goTool, dir, args)
	if err != nil {
		return nil, usagef("%v", err)
	}
	t2j, err := exec.CommandContext(a.ctx, goTool, "tool", "-n", "test2json").Output()
	if err != nil {
		return nil, exitf(exitInfrastructure, "go tool -n test2json: %v", err)
	}
	comp, err := gorun.NewCompiler(goTool, dir, args.Build)
	if err != nil {
		return nil, exitf(exitInfrastructure, "%v", err)
	}
	units := make([]string, len(pkgs))
	byID := make(map[string]gorun.Unit, len(pkgs))
	for i, p := range pkgs {
		units[i] = p.ImportPath
		byID[p.ImportPath] = gorun.Unit{ID: p.ImportPath, Package: p}
	}
	o.Command = strings.Fields(args.Describe())
	if !f.Given("unit-type") {
		o.UnitType = goUnitType
	}
	o.Batch = 1
	o.goMode = &goMode{pkgs: pkgs, runner: &gorun.Runner{
		Args: args, Test2JSON: strings.TrimSpace(string(t2j)), Compiler: comp, Units: byID,
		Supervisor: a.sup, BuildID: o.BuildID,
	}}
	return units, nil
}

// start readies the runner for the slots: per-test timings go to measured,
// a retry from another process reads the failed attempt's cases from the
// build, and hopper run compiles ahead in the order the units are served.
func (g *goMode) start(ctx context.Context, client rueidis.Client, buildID string, expected timings.Table, measured *measurements) {
	g.runner.Measured = measured.add
	g.runner.Earlier = func(ctx context.Context, unit string) ([]testresults.Case, bool) {
		return latestCases(ctx, client, buildID, unit)
	}
	if !g.ahead {
		return
	}
	byPath := map[string]gorun.Package{}
	paths := make([]string, len(g.pkgs))
	for i, p := range g.pkgs {
		byPath[p.ImportPath], paths[i] = p, p.ImportPath
	}
	var order []gorun.Package
	for _, u := range timings.LongestFirst(paths, expected) {
		order = append(order, byPath[u])
	}
	go g.runner.Compiler.Ahead(ctx, order)
}

// latestCases reads the cases of unit's latest settled attempt in the
// build: the one of the highest entry id that has results.
func latestCases(ctx context.Context, client rueidis.Client, buildID, unit string) ([]testresults.Case, bool) {
	b, err := queue.Open(client, buildID, queue.Options{})
	if err != nil {
		return nil, false
	}
	all, err := b.TestResults(ctx)
	if err != nil {
		return nil, false
	}
	var best queue.AttemptRef
	var raw json.RawMessage
	for ref, r := range all {
		if ref.UnitID == unit && (raw == nil || entryAfter(ref.EntryID, best.EntryID)) {
			best, raw = ref, r
		}
	}
	if raw == nil {
		return nil, false
	}
	cases, _, err := testresults.Decode(raw)
	return cases, err == nil
}

// entryAfter reports whether stream entry id a ("ms-seq") comes after b.
func entryAfter(a, b string) bool {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	an, _ := strconv.ParseUint(am, 10, 64)
	bn, _ := strconv.ParseUint(bm, 10, 64)
	if an != bn {
		return an > bn
	}
	ai, _ := strconv.ParseUint(as, 10, 64)
	bi, _ := strconv.ParseUint(bs, 10, 64)
	return ai > bi
}

// close removes the binaries.
func (g *goMode) close() {
	if g != nil {
		_ = g.runner.Compiler.Close()
	}
}
