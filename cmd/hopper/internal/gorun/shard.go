package gorun

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/hopper-queue/hopper/timings"
)

// Split is a package's place in a build: whole, or cut into shards.
type Split struct {
	Package Package
	// Shards are the top-level tests of each shard; none when whole.
	Shards [][]string
}

// Splittable is what says whether a package may be split, and into what:
// its top-level tests as the user's -run selects them. Why is why not,
// when it may not.
type Splittable struct {
	Tests []string
	Why   string
}

// CanSplit says whether p's tests can run apart in shards: not when a
// TestMain may need them all in one process, when a top-level test calls
// t.Parallel (it runs beside the package's other parallel tests, which a
// shard would take away), when the user's -run names subtest levels or
// does not compile, so that no list of top-level tests can refine it, or
// under -bench, whose benchmarks every shard would run.
func CanSplit(t Tests, scanErr error, a Args) Splittable {
	run := a.Run
	switch {
	case a.Bench:
		return Splittable{Why: "-bench runs every benchmark in every shard"}
	case scanErr != nil:
		return Splittable{Why: "its test files do not parse"}
	case t.Main:
		return Splittable{Why: "it has a TestMain"}
	case len(t.Parallel) > 0:
		return Splittable{Why: "top-level test " + t.Parallel[0] + " calls t.Parallel"}
	case !refinable(run):
		return Splittable{Why: "-run " + run + " cannot be refined by a list of top-level tests"}
	}
	return Splittable{Tests: matching(t.Names, run)}
}

// PlanShards decides the build's shards: a package whose expected
// duration is over the fair share (the sum of every package's expected
// duration over slots) goes out as shards of about half the share each,
// at most slots and at most one per test, balanced by its tests' recorded
// durations (or, with none, their count). Half a share leaves the other
// units room to even out the slots; a shard is served ahead of them (the
// timings know no shard). A package with no recorded duration stays
// whole: nothing says it is slow.
func PlanShards(pkgs []Package, tests map[string]Splittable, known timings.Table, slots int) []Split {
	var sum time.Duration
	for _, p := range pkgs {
		sum += known[p.ImportPath]
	}
	share := sum / time.Duration(max(slots, 1))
	out := make([]Split, len(pkgs))
	for i, p := range pkgs {
		out[i] = Split{Package: p}
		d, ok := known[p.ImportPath]
		names := tests[p.ImportPath].Tests
		if !ok || share <= 0 || d <= share || len(names) < 2 {
			continue
		}
		n := min(int(math.Ceil(2*float64(d)/float64(share))), slots, len(names))
		if n >= 2 {
			out[i].Shards = balance(names, testDurations(p.ImportPath, names, known), n)
		}
	}
	return out
}

// testDurations are the recorded durations of a package's tests; a test
// with none is given the mean of those recorded, or 1 when none is.
func testDurations(pkg string, names []string, known timings.Table) []time.Duration {
	ds := make([]time.Duration, len(names))
	var sum time.Duration
	n := 0
	for i, t := range names {
		if d, ok := known[TestKey(pkg, t)]; ok {
			ds[i], sum, n = d, sum+d, n+1
		}
	}
	fill := time.Duration(1)
	if n > 0 {
		fill = max(sum/time.Duration(n), 1)
	}
	for i, t := range names {
		if _, ok := known[TestKey(pkg, t)]; !ok {
			ds[i] = fill
		}
	}
	return ds
}

// balance deals the tests into n shards, longest first onto the lightest
// shard; each shard keeps go test's order of its tests, and none is empty.
func balance(names []string, ds []time.Duration, n int) [][]string {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ds[b], ds[a]) })
	load := make([]time.Duration, n)
	member := make([][]int, n)
	for _, i := range idx {
		light := slices.Index(load, slices.Min(load))
		load[light] += ds[i]
		member[light] = append(member[light], i)
	}
	shards := make([][]string, 0, n)
	for _, m := range member {
		if len(m) == 0 {
			continue
		}
		slices.Sort(m)
		s := make([]string, len(m))
		for j, i := range m {
			s[j] = names[i]
		}
		shards = append(shards, s)
	}
	return shards
}
