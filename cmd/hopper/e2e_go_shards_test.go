package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/timings"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sleepyPackage is a package whose tests each sleep for ms milliseconds.
func sleepyPackage(name string, ms int, tests ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\n", name)
	for _, t := range tests {
		fmt.Fprintf(&b, "func %s(t *testing.T) { time.Sleep(%d * time.Millisecond) }\n\n", t, ms)
	}
	return b.String()
}

// junitSuites maps each suite of a JUnit file to its cases' names.
func junitSuites(t testing.TB, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc gitlabJUnit
	require.NoError(t, xml.Unmarshal(raw, &doc), "%s", raw)
	out := map[string][]string{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			out[s.Name] = append(out[s.Name], c.Name)
		}
	}
	return out
}

// A suite of 26 s of tests in which example.com/gm/slow holds 12 s, on 4
// slots: once the first run has recorded the timings, the second splits
// slow (over the fair share of 6.5 s) into 4 shards of its tests and ends
// under 12 s, which it cannot do whole; the JUnit puts the shards' tests
// back under their package.
func TestGoSplitsTheDominantPackage(t *testing.T) {
	slow := []string{"TestS1", "TestS2", "TestS3", "TestS4", "TestS5", "TestS6", "TestS7", "TestS8"}
	files := map[string]string{"slow/slow_test.go": sleepyPackage("slow", 1500, slow...)}
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		files[p+"/"+p+"_test.go"] = sleepyPackage(p, 1000, "TestX", "TestY")
	}
	dir := goModule(t, files)
	url := redisURL(t)
	timingsPath, junitPath := filepath.Join(dir, "timings.json"), filepath.Join(dir, "junit.xml")
	run := func() (time.Duration, string) {
		start := time.Now()
		code, out, errs := hopper(t, dir, goEnv(t), "run", "--go", "--redis", url, "--build", redistest.BuildID(t), "-j", "4",
			"--progress", "off", "--timings", timingsPath, "--junit-out", junitPath, "--", "./...")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
		return time.Since(start), out
	}
	first, out := run()
	assert.NotContains(t, out, "-run ^(", "no timings yet: nothing says slow is slow")
	known := readTimingsFile(t, timingsPath)
	assert.InDelta(t, 1.5, known["example.com/gm/slow#TestS3"].Seconds(), 0.5, "per-test timings beside the units'")
	assert.InDelta(t, 12, known["example.com/gm/slow"].Seconds(), 2)

	second, out := run()
	t.Logf("wall: first run %.1fs, second run %.1fs", first.Seconds(), second.Seconds())
	assert.Equal(t, 4, strings.Count(out, "==> example.com/gm/slow -run ^(TestS"), "slow goes out as 4 shards:\n%s", out)
	assert.Less(t, second, 12*time.Second, "whole, slow alone takes 12 s")
	suites := junitSuites(t, junitPath)
	got := suites["example.com/gm/slow"]
	slices.Sort(got)
	assert.Equal(t, slow, got, "the shards' tests under their package")
	for name := range suites {
		assert.NotContains(t, name, " -run ", "no suite of a shard")
	}
	known = readTimingsFile(t, timingsPath)
	assert.InDelta(t, 12, known["example.com/gm/slow"].Seconds(), 2, "a split package's time is its shards' sum")
	for u := range known {
		assert.NotContains(t, u, " ", "no shard's time is kept")
	}
}

func readTimingsFile(t testing.TB, path string) timings.Table {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	known, err := timings.Decode(raw)
	require.NoError(t, err)
	return known
}

// A shard is a unit with its own fence: the worker running it is killed
// mid-test, and the other worker reclaims the shard and runs it, and the
// build passes with the shard's tests under their package.
func TestGoShardReclaimedFromAKilledWorker(t *testing.T) {
	dir := goModule(t, map[string]string{
		"slow/slow_test.go": `package slow

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func TestQuick(t *testing.T) { time.Sleep(100 * time.Millisecond) }

// TestHangs hangs on its first run, saying where.
func TestHangs(t *testing.T) {
	state := os.Getenv("HANG_STATE")
	if _, err := os.Stat(state); err != nil {
		os.WriteFile(state+".tmp", []byte(fmt.Sprintf("%d %s\n", os.Getpid(), os.Getenv("HOPPER_WORKER_ID"))), 0o644)
		os.Rename(state+".tmp", state)
		time.Sleep(10 * time.Minute)
	}
}
`,
		"other/other_test.go": sleepyPackage("other", 100, "TestOther"),
	})
	// Timings as an earlier build left them: slow is most of the suite.
	timingsPath := filepath.Join(dir, "timings.json")
	known := timings.Table{"example.com/gm/slow": 10 * time.Second, "example.com/gm/other": time.Second,
		"example.com/gm/slow#TestHangs": 9 * time.Second, "example.com/gm/slow#TestQuick": time.Second}
	require.NoError(t, os.WriteFile(timingsPath, known.Encode(), 0o644))

	url, build := redisURL(t), redistest.BuildID(t)
	state := filepath.Join(dir, "hang.state")
	// Two CI jobs (CI_NODE_TOTAL): the fair share is half the suite.
	env := goEnv(t, "HANG_STATE="+state, "CI_NODE_TOTAL=2")
	byID := map[string]*proc{}
	for _, id := range []string{"w1", "w2"} {
		byID[id] = start(t, dir, env, "work", "--go", "--build", build, "--worker", id, "--redis", url,
			"--timeout", "1.5", "--progress", "off", "--timings", timingsPath, "--", "./...")
	}
	hung := strings.Fields(waitFile(t, state, time.Minute))
	require.Len(t, hung, 2)
	pid, err := strconv.Atoi(hung[0])
	require.NoError(t, err)
	pgid, err := syscall.Getpgid(pid)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }) // the killed worker's test binary
	victim, survivor := hung[1], "w1"
	if victim == "w1" {
		survivor = "w2"
	}
	require.NoError(t, byID[victim].cmd.Process.Signal(syscall.SIGKILL))
	assert.Equal(t, -int(syscall.SIGKILL), byID[victim].wait(10*time.Second))
	_ = syscall.Kill(-pgid, syscall.SIGKILL)

	assert.Equal(t, 0, byID[survivor].wait(time.Minute), "survivor stderr:\n%s", byID[survivor].stderr)
	assert.Contains(t, byID[survivor].stdout.String(), "==> example.com/gm/slow -run ^(TestHangs)$: passed")

	sumPath, junitPath := filepath.Join(dir, "summary.json"), filepath.Join(dir, "junit.xml")
	code, rout, rerr := hopper(t, dir, baseEnv(), "report", "--build", build, "--redis", url, "--timeout", "20", "--summary-out", sumPath, "--junit-out", junitPath)
	require.Equal(t, 0, code, "%s%s", rout, rerr)
	s := readSummary(t, sumPath)
	assert.Equal(t, 3, s.TotalUnits, "other, and slow in 2 shards")
	assert.Equal(t, map[string]int{"example.com/gm/slow -run ^(TestHangs)$": 1}, s.ReclaimCounts)
	got := junitSuites(t, junitPath)["example.com/gm/slow"]
	slices.Sort(got)
	assert.Equal(t, []string{"TestHangs", "TestQuick"}, got)
}
