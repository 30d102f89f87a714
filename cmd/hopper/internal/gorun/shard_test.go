package gorun

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/timings"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pkgs(paths ...string) []Package {
	out := make([]Package, len(paths))
	for i, p := range paths {
		out[i] = Package{ImportPath: p}
	}
	return out
}

// A suite of 26 s whose package m/slow holds 12 s, on 4 slots (a fair
// share of 6.5 s): m/slow goes out as shards of about 3.25 s, 4 of them,
// balanced by its tests' durations; m/a is under the share, and m/b's one
// test cannot be split.
func TestPlanShardsSplitsTheDominantPackage(t *testing.T) {
	known := timings.Table{"m/slow": 12 * time.Second, "m/a": 6 * time.Second, "m/b": 8 * time.Second}
	names := []string{"TestA", "TestB", "TestC", "TestD", "TestE", "TestF"}
	for n, d := range map[string]time.Duration{"TestA": 4, "TestB": 3, "TestC": 2, "TestD": 1, "TestE": 1, "TestF": 1} {
		known[TestKey("m/slow", n)] = d * time.Second
	}
	tests := map[string]Splittable{"m/slow": {Tests: names}, "m/a": {Tests: []string{"TestX", "TestY"}}, "m/b": {Tests: []string{"TestZ"}}}
	plan := PlanShards(pkgs("m/slow", "m/a", "m/b"), tests, known, 4)
	require.Len(t, plan, 3)
	assert.Equal(t, [][]string{{"TestA"}, {"TestB"}, {"TestC", "TestF"}, {"TestD", "TestE"}}, plan[0].Shards)
	assert.Empty(t, plan[1].Shards, "under the share")
	assert.Empty(t, plan[2].Shards, "over the share, but one test cannot be split")
}

func TestPlanShardsLeavesAloneWhatItCannotJudge(t *testing.T) {
	tests := map[string]Splittable{"m/slow": {Tests: []string{"TestA", "TestB", "TestC"}}, "m/b": {Tests: []string{"TestZ"}}}
	none := PlanShards(pkgs("m/slow", "m/b"), tests, timings.Table{}, 4)
	assert.Empty(t, none[0].Shards, "no timings: nothing says it is slow")
	one := PlanShards(pkgs("m/slow", "m/b"), tests, timings.Table{"m/slow": 10 * time.Second, "m/b": time.Second}, 1)
	assert.Empty(t, one[0].Shards, "one slot: a shard has no one to run beside")
	unsafe := PlanShards(pkgs("m/slow", "m/b"), map[string]Splittable{"m/slow": {Why: "it has a TestMain"}}, timings.Table{"m/slow": 10 * time.Second, "m/b": time.Second}, 4)
	assert.Empty(t, unsafe[0].Shards)
	// No per-test timings: by count, 3 slots over 3 tests.
	bycount := PlanShards(pkgs("m/slow", "m/b"), tests, timings.Table{"m/slow": 10 * time.Second, "m/b": time.Second}, 3)
	assert.Equal(t, [][]string{{"TestA"}, {"TestB"}, {"TestC"}}, bycount[0].Shards)
}

func TestCanSplit(t *testing.T) {
	names := []string{"TestA", "TestB", "TestAB"}
	assert.Equal(t, []string{"TestA", "TestAB"}, CanSplit(Tests{Names: names}, nil, Args{Run: "TestA"}).Tests)
	for why, s := range map[string]Splittable{
		"it has a TestMain":       CanSplit(Tests{Names: names, Main: true}, nil, Args{}),
		"TestB calls t.Parallel":  CanSplit(Tests{Names: names, Parallel: []string{"TestB"}}, nil, Args{}),
		"cannot be refined":       CanSplit(Tests{Names: names}, nil, Args{Run: "TestA/sub"}),
		"test files do not parse": CanSplit(Tests{}, errors.New("x"), Args{}),
		"-bench runs every":       CanSplit(Tests{Names: names}, nil, Args{Bench: true}),
	} {
		assert.Nil(t, s.Tests, why)
		assert.Contains(t, s.Why, why)
	}
}

func TestShardIDRoundTrip(t *testing.T) {
	all := []string{"TestA", "TestB", "TestC"}
	lookup := func(pkg string) ([]string, bool) { return all, pkg == "m/p" }
	id := ShardID("m/p", []string{"TestA", "TestC"}, all)
	assert.Equal(t, "m/p -run ^(TestA|TestC)$", id)
	pkg, tests, err := ParseUnitID(id, lookup)
	require.NoError(t, err)
	assert.Equal(t, "m/p", pkg)
	assert.Equal(t, []string{"TestA", "TestC"}, tests)
	assert.Equal(t, "m/p", PackageOf(id))

	pkg, tests, err = ParseUnitID("m/p", lookup)
	require.NoError(t, err)
	assert.Equal(t, "m/p", pkg)
	assert.Nil(t, tests, "a whole package")

	_, _, err = ParseUnitID("m/p -run ^(TestZ)$", lookup)
	assert.ErrorContains(t, err, "m/p has no test TestZ here")
	_, _, err = ParseUnitID("m/q -run ^(TestA)$", lookup)
	assert.ErrorContains(t, err, "no package m/q")
}

// A shard of many long names gets the bitmap form, within a unit id.
func TestShardIDBitmap(t *testing.T) {
	var all []string
	for i := range 400 {
		all = append(all, fmt.Sprintf("TestWithAQuiteLongName%03d", i))
	}
	shard := all[100:300]
	id := ShardID("example.com/m/p", shard, all)
	assert.True(t, strings.HasPrefix(id, "example.com/m/p tests "), id)
	assert.LessOrEqual(t, len(id), queue.MaxIDBytes)
	_, tests, err := ParseUnitID(id, func(string) ([]string, bool) { return all, true })
	require.NoError(t, err)
	assert.Equal(t, shard, tests)
	_, _, err = ParseUnitID(id, func(string) ([]string, bool) { return all[:10], true })
	assert.ErrorContains(t, err, "does not fit the 10 tests")

	ids, ok := ShardIDs("example.com/m/p", [][]string{all[:200], all[200:]}, all)
	assert.True(t, ok)
	assert.Len(t, ids, 2)
	var many []string
	for i := range 9000 {
		many = append(many, fmt.Sprintf("Test%d", i))
	}
	_, ok = ShardIDs("example.com/m/p", [][]string{many[:4500], many[4500:]}, many)
	assert.False(t, ok, "a bitmap over 9000 tests is over a unit id's 1024 bytes")
}
