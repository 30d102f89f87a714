package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/internal/redistest"
)

// commandSuite is the suite the command runs: passes, a unit that always
// fails, and one that fails its first attempt only. Each script counts its
// attempts in state/<name>.count.
var commandSuite = map[string]string{
	"pass_a.sh": `echo "pass a on $HOPPER_WORKER_ID"`,
	"pass_b.sh": `echo "pass b"; sleep 0.3`,
	"pass_c.sh": `echo "pass c"; sleep 0.1`,
	"pass_d.sh": `echo "pass d"; sleep 0.2`,
	"fail.sh":   `echo "fail.sh: want 1, got 2 (attempt $n)"; exit 1`,
	"flaky.sh":  `if [ $n -lt 2 ]; then echo "flaky.sh failed on attempt $n"; exit 1; fi; echo "flaky.sh passed on attempt $n"`,
}

var commandUnits = []string{"pass_a.sh", "fail.sh", "pass_b.sh", "flaky.sh", "pass_c.sh", "pass_d.sh"}

// commandBuild is one build run through the hopper binary: its folder of
// scripts and the --redis value its processes are given.
type commandBuild struct {
	*build
	dir   string
	redis string
	// workers are the hopper work processes, once they have ended.
	workers []commandResult
}

type commandResult struct {
	code           int
	stdout, stderr string
}

// Two builds at once on two shards, each run whole by three `hopper work`
// processes that know the cluster only by a few seed addresses, then read
// by `hopper report` and `hopper events`: the verdict, the exit codes, the
// JSON summary, the JUnit file, each attempt run once, every unit finalized
// once, every key of a build on its own primary.
func TestClusterCommandBuilds(t *testing.T) {
	bin := hopperBinary(t)
	primaries, err := cl.Primaries(t.Context())
	require.NoError(t, err)
	require.Len(t, primaries, 3)
	var replicas []string
	for _, p := range primaries {
		r, err := cl.ReplicasOf(t.Context(), p)
		require.NoError(t, err)
		replicas = append(replicas, r...)
	}
	require.NotEmpty(t, replicas)

	ids := idsOnEveryPrimary(t, 1)
	// The first build knows the cluster by its primaries, in the list form;
	// the second only by replicas, in rueidis's ?addr= form, and its report
	// reads the variable: the client finds the primaries itself.
	builds := []*commandBuild{
		{build: newBuild(t, ids[primaries[0]][0]), redis: seedList(primaries)},
		{build: newBuild(t, ids[primaries[1]][0]), redis: seedQuery(replicas)},
	}
	require.NotEqual(t, builds[0].primary(), builds[1].primary())

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for _, b := range builds {
		b.dir = scriptFolder(t, commandSuite)
		b.workers = make([]commandResult, 3)
		for i := range b.workers {
			args := []string{"work", "--build", b.id, "--worker", fmt.Sprintf("w%d", i+1), "--redis", b.redis,
				"--timeout", "5", "--max-requeues", "1", "--requeue-tolerance", "1", "--progress", "plain"}
			args = append(append(args, commandUnits...), "--", "sh", "{unit}")
			wg.Go(func() { b.workers[i] = runHopper(ctx, bin, b.dir, nil, args...) })
		}
	}
	wg.Wait()
	t.Logf("2 builds of %d units, 3 hopper work processes each, in %v", len(commandUnits), time.Since(start))

	for n, b := range builds {
		var stdout strings.Builder
		for i, w := range b.workers {
			require.Equal(t, 0, w.code, "build %s, worker w%d:\nstdout:\n%s\nstderr:\n%s", b.id, i+1, w.stdout, w.stderr)
			stdout.WriteString(w.stdout)
		}
		out := stdout.String()
		assert.Equal(t, 1, strings.Count(out, "fail.sh: want 1, got 2"), "a failure is printed once, for the attempt that counts:\n%s", out)
		assert.Contains(t, out, "fail.sh: want 1, got 2 (attempt 2)")
		assert.NotContains(t, out, "flaky.sh failed")
		assert.Equal(t, 1, strings.Count(out, "flaky.sh passed on attempt 2"))
		assert.Equal(t, map[string]string{
			"pass_a.sh": "1", "pass_b.sh": "1", "pass_c.sh": "1", "pass_d.sh": "1", "fail.sh": "2", "flaky.sh": "2",
		}, attemptCounts(t, b.dir), "attempts of each script, build %s", b.id)

		reports := t.TempDir()
		summaryPath, junitPath := filepath.Join(reports, "summary.json"), filepath.Join(reports, "junit.xml")
		args := []string{"report", "--build", b.id, "--summary-out", summaryPath, "--junit-out", junitPath,
			"--failed-out", filepath.Join(reports, "failed.txt")}
		var env []string
		if n == 0 {
			args = append(args, "--redis", b.redis)
		} else {
			env = []string{"HOPPER_REDIS_URL=" + b.redis}
		}
		r := runHopper(ctx, bin, b.dir, env, args...)
		require.Equal(t, 1, r.code, "report of build %s:\nstdout:\n%s\nstderr:\n%s", b.id, r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "report: build "+b.id+": failed\n")

		s := readCommandSummary(t, summaryPath)
		assert.Equal(t, b.id, s.BuildID)
		assert.Equal(t, "failed", s.Verdict)
		assert.Equal(t, 1, s.ExitCode)
		assert.Equal(t, len(commandUnits), s.TotalUnits)
		assert.Equal(t, len(commandUnits), s.FinalizedCount)
		require.Len(t, s.Failed, 1)
		assert.Equal(t, "fail.sh", s.Failed[0].UnitID)
		assert.Equal(t, "retry_budget_exhausted", s.Failed[0].Reason)
		assert.Equal(t, []string{"flaky.sh"}, s.Flaky)
		assert.Empty(t, s.Abandoned)
		assert.Empty(t, s.NeverFinalized)
		assert.Equal(t, map[string]int{"fail.sh": 1, "flaky.sh": 1}, s.RetryCounts)
		assert.Empty(t, s.ReclaimCounts)
		failedList, err := os.ReadFile(filepath.Join(reports, "failed.txt"))
		require.NoError(t, err)
		assert.Equal(t, "fail.sh\n", string(failedList))
		requireJUnit(t, junitPath, commandUnits, []string{"fail.sh"})

		ev := runHopper(ctx, bin, b.dir, nil, "events", "--build", b.id, "--redis", b.redis)
		require.Equal(t, 0, ev.code, ev.stderr)
		finalized, workers := map[string]int{}, map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(ev.stdout), "\n") {
			var e map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &e), "line %q", line)
			if e["type"] == events.TypeFinalized {
				finalized[e["unit_id"].(string)]++
				workers[e["worker_id"].(string)]++
			}
		}
		assert.Len(t, finalized, len(commandUnits), "hopper events: a finalized event for every unit")
		for u, c := range finalized {
			assert.Equal(t, 1, c, "hopper events: finalized events of %s", u)
		}
		t.Logf("build %s on %s (--redis %s): units finalized by worker %v", b.id, b.primary(), redacted(b.redis), workers)

		types := b.requireFinalizedOnce(commandUnits)
		assert.Equal(t, 2, types[events.TypeRequeued], "fail.sh and flaky.sh were requeued once each")
		b.requireOnOneNode()
	}
}

// seedList is the --redis value that names seeds as a comma-separated
// list, with the credentials of the user under test.
func seedList(seeds []string) string {
	return "redis://" + commandUser() + strings.Join(seeds, ",")
}

// seedQuery names the same seeds as rueidis.ParseURL reads them: the first
// in the URL, the others in addr= parameters.
func seedQuery(seeds []string) string {
	u := "redis://" + commandUser() + seeds[0]
	for i, s := range seeds[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + s
	}
	return u
}

// commandUser is the user part of a --redis value: as the cluster's other
// tests connect, the scripting-denied user when HOPPER_TEST_ACL is set,
// else the default user.
func commandUser() string {
	if os.Getenv("HOPPER_TEST_ACL") == "" {
		return ""
	}
	return redistest.NoScriptUser + ":" + redistest.NoScriptUser + "@"
}

func redacted(u string) string {
	return strings.Replace(u, ":"+redistest.NoScriptUser+"@", ":xxxxx@", 1)
}

// hopperBinary builds cmd/hopper into the test's folder, with -race when
// this test binary has it.
func hopperBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hopper")
	args := []string{"build", "-o", bin}
	if info, ok := debug.ReadBuildInfo(); ok && slices.ContainsFunc(info.Settings, func(s debug.BuildSetting) bool {
		return s.Key == "-race" && s.Value == "true"
	}) {
		args = append(args, "-race")
	}
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	start := time.Now()
	out, err := exec.Command(goTool, append(args, "github.com/hopper-queue/hopper/cmd/hopper")...).CombinedOutput()
	require.NoError(t, err, "go build of cmd/hopper:\n%s", out)
	t.Logf("%v in %v", args, time.Since(start))
	return bin
}

// scriptFolder writes the scripts, each counting its attempts in
// state/<name>.count, into a folder of their own.
func scriptFolder(t testing.TB, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "state"), 0o755))
	for name, body := range scripts {
		script := "n=$(($(cat state/" + name + ".count 2>/dev/null || echo 0) + 1)); echo $n > state/" + name + ".count\n" + body + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o644))
	}
	return dir
}

// attemptCounts reads each script's count of attempts.
func attemptCounts(t testing.TB, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "state", "*.count"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out[strings.TrimSuffix(filepath.Base(f), ".count")] = strings.TrimSpace(string(b))
	}
	return out
}

// runHopper runs the binary in dir to its end, with nothing of the test's
// environment but PATH, HOME and TMPDIR, and extra. A -race binary halts on
// its first race, which fails its exit code.
func runHopper(ctx context.Context, bin, dir string, extra []string, args ...string) commandResult {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(),
		"LANG=C", "GORACE=halt_on_error=1"}, extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A killed worker's command lives on in its own process group; the
	// pipes are not waited for past this.
	cmd.WaitDelay = 5 * time.Second
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			stderr.WriteString("\n(stopped: " + ctx.Err().Error() + ")")
		}
	}
	return commandResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// commandSummary is the part of the JSON summary the test reads.
type commandSummary struct {
	BuildID        string         `json:"build_id"`
	Verdict        string         `json:"verdict"`
	ExitCode       int            `json:"exit_code"`
	TotalUnits     int            `json:"total_units"`
	FinalizedCount int            `json:"finalized_count"`
	Flaky          []string       `json:"flaky"`
	Abandoned      []string       `json:"abandoned"`
	NeverFinalized []any          `json:"never_finalized"`
	RetryCounts    map[string]int `json:"retry_counts"`
	ReclaimCounts  map[string]int `json:"reclaim_counts"`
	Failed         []struct {
		UnitID string `json:"unit_id"`
		Reason string `json:"reason"`
	} `json:"failed"`
}

func readCommandSummary(t testing.TB, path string) commandSummary {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var s commandSummary
	require.NoError(t, json.Unmarshal(raw, &s), "%s", raw)
	return s
}

// requireJUnit checks the JUnit file: one test case per unit, failures
// for the failing units only.
func requireJUnit(t testing.TB, path string, units, failing []string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Errors   int `xml:"errors,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(raw, &doc), "JUnit is well-formed XML:\n%s", raw)
	require.Len(t, doc.Suites, 1)
	s := doc.Suites[0]
	assert.Equal(t, len(units), s.Tests)
	assert.Equal(t, len(failing), s.Failures)
	assert.Zero(t, s.Errors)
	var names, failed []string
	for _, c := range s.Cases {
		names = append(names, c.Name)
		if c.Failure != nil {
			failed = append(failed, c.Name)
		}
	}
	assert.ElementsMatch(t, units, names)
	assert.ElementsMatch(t, failing, failed)
}
