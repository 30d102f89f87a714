package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/gorun"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/testresults"
	"github.com/hopper-queue/hopper/timings"
	"github.com/redis/rueidis"
)

// goUnitType is --unit-type under --go, unless given: the report puts the
// shards of a build of this type back under their package (goPartOf).
const goUnitType = "go-package"

// goPartOf is report.Options.PartOf: a shard of a --go build is a part of
// its package.
func goPartOf(unitType, unit string) string {
	if unitType != goUnitType {
		return ""
	}
	return gorun.PackageOf(unit)
}

// goMode is a --go build's machinery (see docs/cli.md#go-native-runs).
type goMode struct {
	runner *gorun.Runner
	pkgs   []gorun.Package
	tests  map[string][]string // each package's top-level tests
	// examples counts the top-level tests -run selects, the build's
	// examples when this worker publishes it.
	examples int64

	mu    sync.Mutex
	split map[string]time.Duration // the shards' durations run here, by package
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
	const goTool = "go"
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
	o.Command = args.Command()
	if !f.Given("unit-type") {
		o.UnitType = goUnitType
	}
	o.Batch = 1
	o.goMode = &goMode{pkgs: pkgs, tests: map[string][]string{}, split: map[string]time.Duration{}, runner: &gorun.Runner{
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

// units decides the build's units. A build already published is joined
// as its publisher split it, when its units cover exactly this worker's
// packages (else the suite's fingerprint tells the mismatch); otherwise
// this worker's packages go out, the slow ones as shards
// (gorun.PlanShards) over slots.
func (g *goMode) units(ctx context.Context, client rueidis.Client, buildID string, expected timings.Table, slots int) []string {
	if ids, ok := g.published(ctx, client, buildID); ok {
		return ids
	}
	tests := map[string]gorun.Splittable{}
	for _, p := range g.pkgs {
		t, err := gorun.ScanTests(p)
		tests[p.ImportPath] = gorun.CanSplit(t, err, g.runner.Args)
		g.tests[p.ImportPath] = t.Names
		g.examples += int64(len(g.runner.Args.Selected(t.Names)))
	}
	var ids []string
	for _, s := range gorun.PlanShards(g.pkgs, tests, expected, slots) {
		shards, ok := gorun.ShardIDs(s.Package.ImportPath, s.Shards, g.tests[s.Package.ImportPath])
		if len(s.Shards) == 0 || !ok {
			ids = append(ids, s.Package.ImportPath)
			continue
		}
		for i, id := range shards {
			g.runner.Units[id] = gorun.Unit{ID: id, Package: s.Package, Tests: s.Shards[i]}
		}
		ids = append(ids, shards...)
	}
	return ids
}

// published reads the units of the build when it is published and they
// are this worker's packages, whole or in shards it can read back.
func (g *goMode) published(ctx context.Context, client rueidis.Client, buildID string) ([]string, bool) {
	b, err := queue.Open(client, buildID, queue.Options{})
	if err != nil {
		return nil, false
	}
	ids, err := b.ReadUnitIDs(ctx)
	if err != nil || len(ids) == 0 {
		return nil, false
	}
	byPath := map[string]gorun.Package{}
	for _, p := range g.pkgs {
		byPath[p.ImportPath] = p
	}
	all := func(pkg string) ([]string, bool) {
		p, ok := byPath[pkg]
		if !ok {
			return nil, false
		}
		t, err := gorun.ScanTests(p)
		return t.Names, err == nil
	}
	covered := map[string]bool{}
	units := map[string]gorun.Unit{}
	for _, id := range ids {
		pkg, tests, err := gorun.ParseUnitID(id, all)
		if err != nil || byPath[pkg].ImportPath == "" {
			return nil, false
		}
		covered[pkg] = true
		units[id] = gorun.Unit{ID: id, Package: byPath[pkg], Tests: tests}
	}
	if len(covered) != len(byPath) {
		return nil, false
	}
	maps.Copy(g.runner.Units, units)
	// The stream holds them longest first; the fingerprint has them in
	// the order they were given: go list's packages, a package's shards
	// in its place, which publishing keeps among them (timings know no
	// shard).
	rank := map[string]int{}
	for i, p := range g.pkgs {
		rank[p.ImportPath] = i
	}
	slices.SortStableFunc(ids, func(a, b string) int {
		return cmp.Compare(rank[gorun.PackageOf(a)], rank[gorun.PackageOf(b)])
	})
	return ids, true
}

// measured keeps the packages' durations and the tests' (which the runner
// gives), not a shard's: a shard's id is this build's split only. A split
// package's duration is the sum of its shards run here, as long as it
// would have taken whole, so that the next build can judge it again.
func (g *goMode) measured(m *measurements) func(string, time.Duration) {
	return func(unit string, d time.Duration) {
		pkg := gorun.PackageOf(unit)
		if pkg == unit {
			m.add(unit, d)
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		g.split[pkg] += d
		m.add(pkg, g.split[pkg])
	}
}

// goSlots are the slots a --go build's fair share divides by: this
// process's, times the CI's parallel jobs when they can join it (not on
// hopper run's embedded server, whose build is this process's alone).
func (o workOptions) goSlots(env Env) int {
	if o.embedded {
		return o.Processes
	}
	return o.Processes * ciNodes(env)
}

// ciNodes is how many parallel jobs the CI runs the build on, when it says
// (CircleCI, Buildkite, GitLab CI); 1 otherwise.
func ciNodes(env Env) int {
	v, _ := env.first("CIRCLE_NODE_TOTAL", "BUILDKITE_PARALLEL_JOB_COUNT", "CI_NODE_TOTAL")
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return n
	}
	return 1
}
