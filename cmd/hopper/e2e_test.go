package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture writes the suite of small shell scripts the tests run, each
// counting its attempts in state/<name>.count, and returns its folder.
func fixture(t testing.TB, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "state"), 0o755))
	for name, body := range scripts {
		script := "n=$(($(cat state/" + name + ".count 2>/dev/null || echo 0) + 1)); echo $n > state/" + name + ".count\n" + body + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o644))
	}
	return dir
}

// theSuite: three passes, a hard failure, a unit that fails once, and one
// that hangs on its first attempt (writing its pid) and passes after.
var theSuite = map[string]string{
	"pass_a.sh": `echo "pass a on $HOPPER_WORKER_ID"`,
	"pass_b.sh": `echo "pass b"; sleep 0.2`,
	"pass_c.sh": `echo "pass c"`,
	"fail.sh":   `echo "fail.sh: expected 1 got 2 (attempt $n)"; exit 1`,
	"flaky.sh":  `if [ $n -lt 2 ]; then echo "flaky failed on attempt $n"; exit 1; fi; echo "flaky passed on attempt $n"`,
	"hang.sh":   `if [ $n -lt 2 ]; then echo $$ > state/hang.pid; echo "hanging"; sleep 600; fi; echo "hang passed on attempt $n"`,
}

var suiteUnits = []string{"pass_a.sh", "pass_b.sh", "fail.sh", "flaky.sh", "hang.sh", "pass_c.sh"}

// summary is the part of the JSON summary the tests compare.
type summary struct {
	BuildID        string           `json:"build_id"`
	Verdict        string           `json:"verdict"`
	ExitCode       int              `json:"exit_code"`
	TotalUnits     int              `json:"total_units"`
	FinalizedCount int              `json:"finalized_count"`
	Flaky          []string         `json:"flaky"`
	Abandoned      []string         `json:"abandoned"`
	NeverFinalized []any            `json:"never_finalized"`
	RetryCounts    map[string]int   `json:"retry_counts"`
	ReclaimCounts  map[string]int   `json:"reclaim_counts"`
	WorkerErrors   []map[string]any `json:"worker_errors"`
	Failed         []struct {
		UnitID   string `json:"unit_id"`
		Reason   string `json:"reason"`
		WorkerID string `json:"worker_id"`
		Errors   []struct {
			ExampleID   string `json:"example_id"`
			Description string `json:"description"`
			Class       string `json:"class"`
			Message     string `json:"message"`
		} `json:"errors"`
	} `json:"failed"`
}

func readSummary(t testing.TB, path string) summary {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var s summary
	require.NoError(t, json.Unmarshal(raw, &s), "%s", raw)
	return s
}

// verdictOf is what must be the same whichever server ran the build.
func verdictOf(s summary) string {
	var failed []string
	for _, f := range s.Failed {
		failed = append(failed, f.UnitID+"/"+f.Reason)
	}
	return fmt.Sprintf("verdict=%s exit=%d finalized=%d/%d failed=%v flaky=%v abandoned=%v retries=%v reclaims=%v",
		s.Verdict, s.ExitCode, s.FinalizedCount, s.TotalUnits, failed, s.Flaky, s.Abandoned, s.RetryCounts, s.ReclaimCounts)
}

type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Cases    []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
			Error   *struct{} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// Three worker processes over the fixture suite, then the report: its
// verdict, exit code, JSON summary, JUnit, failed list and HTML.
func TestThreeWorkersThenReport(t *testing.T) {
	dir := fixture(t, theSuite)
	url, build := redisURL(t), redistest.BuildID(t)
	workers := make([]*proc, 3)
	for i := range workers {
		args := []string{"work", "--build", build, "--worker", fmt.Sprintf("w%d", i+1), "--redis", url,
			"--timeout", "1.5", "--max-unit-duration", "1.5", "--max-requeues", "1", "--requeue-tolerance", "1",
			"--progress", "plain"}
		workers[i] = start(t, dir, baseEnv(), append(append(args, suiteUnits...), "--", "sh", "{unit}")...)
	}
	codes := map[int]int{}
	var stdout, stderr strings.Builder
	for _, w := range workers {
		codes[w.wait(time.Minute)]++
		stdout.WriteString(w.stdout.String())
		stderr.WriteString(w.stderr.String())
	}
	t.Logf("workers' stderr:\n%s", stderr.String())
	// The worker that ran hang.sh first aborted (4) past
	// --max-unit-duration + --timeout; the others finished the build (0).
	assert.Equal(t, map[int]int{0: 2, 4: 1}, codes, "exit codes")
	assert.Contains(t, stderr.String(), "Aborting worker: hang.sh exceeded 1.5s")
	assert.Contains(t, stderr.String(), "Retrying flaky.sh (retry 1 of 1; next attempt 2): 1 failure(s)")
	// The hung process group was killed with its worker.
	pid, err := strconv.Atoi(waitFile(t, filepath.Join(dir, "state/hang.pid"), time.Second))
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 20*time.Millisecond, "hang.sh (pid %d) survived", pid)

	// Each failure is printed once: only the attempt whose result counts.
	out := stdout.String()
	assert.Equal(t, 1, strings.Count(out, "fail.sh: expected 1 got 2"), "stdout:\n%s", out)
	assert.Contains(t, out, "fail.sh: expected 1 got 2 (attempt 2)")
	assert.NotContains(t, out, "flaky failed")
	assert.Equal(t, 1, strings.Count(out, "flaky passed on attempt 2"))
	assert.NotContains(t, out, "hanging")
	assert.Contains(t, out, "==> fail.sh: failed (exit status 1)")

	reports := t.TempDir()
	code, rout, rerr := hopper(t, dir, baseEnv("HOPPER_REDIS_URL="+url, "HOPPER_BUILD_ID="+build), "report",
		"--summary-out", filepath.Join(reports, "out/summary.json"), "--junit-out", filepath.Join(reports, "junit.xml"),
		"--html-out", filepath.Join(reports, "report.html"), "--failed-out", filepath.Join(reports, "failed.txt"))
	assert.Equal(t, 1, code, "report:\n%s%s", rout, rerr)
	assert.Contains(t, rout, "report: build "+build+": failed\n")
	assert.Contains(t, rout, "  1 of 6 units failed\n")
	assert.Contains(t, rout, "  failed: fail.sh (retry_budget_exhausted, worker ")
	assert.Contains(t, rout, "exit status 1: fail.sh: expected 1 got 2 (attempt 2)")
	assert.Contains(t, rout, "  flaky (passed after requeue): flaky.sh\n")
	assert.Contains(t, rout, "  abandoned (exceeded --max-unit-duration): hang.sh\n")

	s := readSummary(t, filepath.Join(reports, "out/summary.json"))
	assert.Equal(t, "failed", s.Verdict)
	assert.Equal(t, 1, s.ExitCode)
	assert.Equal(t, 6, s.FinalizedCount)
	require.Len(t, s.Failed, 1)
	f := s.Failed[0]
	assert.Equal(t, "fail.sh", f.UnitID)
	assert.Equal(t, "retry_budget_exhausted", f.Reason)
	require.Len(t, f.Errors, 1)
	assert.Equal(t, "fail.sh", f.Errors[0].ExampleID)
	assert.Equal(t, "sh fail.sh", f.Errors[0].Description)
	assert.Equal(t, "exit status 1", f.Errors[0].Class)
	assert.Equal(t, "fail.sh: expected 1 got 2 (attempt 2)", f.Errors[0].Message)
	assert.Equal(t, []string{"flaky.sh"}, s.Flaky)
	assert.Equal(t, []string{"hang.sh"}, s.Abandoned)
	assert.Equal(t, map[string]int{"fail.sh": 1, "flaky.sh": 1}, s.RetryCounts)
	assert.Equal(t, map[string]int{"hang.sh": 1}, s.ReclaimCounts)
	assert.Empty(t, s.NeverFinalized)

	raw, err := os.ReadFile(filepath.Join(reports, "junit.xml"))
	require.NoError(t, err)
	var doc junitDoc
	require.NoError(t, xml.Unmarshal(raw, &doc), "JUnit is well-formed XML:\n%s", raw)
	require.Len(t, doc.Suites, 1)
	js := doc.Suites[0]
	assert.Equal(t, 6, js.Tests)
	assert.Equal(t, 1, js.Failures)
	assert.Equal(t, 0, js.Errors)
	var names, failing []string
	for _, c := range js.Cases {
		names = append(names, c.Name)
		if c.Failure != nil {
			failing = append(failing, c.Name)
		}
	}
	assert.ElementsMatch(t, suiteUnits, names)
	assert.Equal(t, []string{"fail.sh"}, failing)

	failedList, err := os.ReadFile(filepath.Join(reports, "failed.txt"))
	require.NoError(t, err)
	assert.Equal(t, "fail.sh\n", string(failedList))

	page, err := os.ReadFile(filepath.Join(reports, "report.html"))
	require.NoError(t, err)
	html := string(page)
	assert.Contains(t, html, `<svg id="timeline"`)
	for _, w := range []string{"w1", "w2", "w3"} {
		assert.Contains(t, html, `data-worker="`+w+`"`)
	}
	for _, class := range []string{"bar passed", "bar failed", "bar requeued", "bar lost"} {
		assert.Contains(t, html, class, "a bar of class %q", class)
	}
	assert.Contains(t, html, `class="reclaim"`, "the reclaim is marked")
	assert.Contains(t, html, `class="abandon"`, "the abandonment is marked")
	assertSelfContained(t, html)

	// The attempt log, as hopper events prints it.
	code, evout, everr := hopper(t, dir, baseEnv(), "events", "--build", build, "--redis", url)
	require.Equal(t, 0, code, everr)
	evs := decodeLines(t, evout)
	assert.Equal(t, 1, countEvents(evs, "finalized", "hang.sh"))
	assert.Equal(t, 6, countEvents(evs, "finalized", ""))
}

// assertSelfContained checks that the page loads nothing from the network.
func assertSelfContained(t testing.TB, html string) {
	t.Helper()
	for _, ref := range []string{`src="http`, `href="http`, `src='http`, `href='http`, `@import`, `url(http`, `<link `} {
		assert.NotContains(t, html, ref)
	}
}

func decodeLines(t testing.TB, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), "line %q", line)
		evs = append(evs, ev)
	}
	return evs
}

// countEvents counts events of type typ, of unit when it is not empty.
func countEvents(evs []map[string]any, typ, unit string) int {
	n := 0
	for _, ev := range evs {
		if ev["type"] == typ && (unit == "" || ev["unit_id"] == unit) {
			n++
		}
	}
	return n
}

// A worker process killed with SIGKILL in the middle of a unit: another
// worker reclaims the unit once it has been silent for --timeout and
// finalizes it, once.
func TestKilledWorkerUnitReclaimed(t *testing.T) {
	dir := fixture(t, map[string]string{
		"slow.sh":  `if [ $n -lt 2 ]; then echo "$$ $HOPPER_WORKER_ID" > state/slow.started; sleep 600; fi; echo "slow passed on attempt $n"`,
		"quick.sh": `echo quick`,
		"other.sh": `echo other`,
	})
	url, build := redisURL(t), redistest.BuildID(t)
	byID := map[string]*proc{}
	for _, id := range []string{"w1", "w2"} {
		byID[id] = start(t, dir, baseEnv(), "work", "--build", build, "--worker", id, "--redis", url,
			"--timeout", "1.5", "--progress", "off", "slow.sh", "quick.sh", "other.sh", "--", "sh", "{unit}")
	}
	started := strings.Fields(waitFile(t, filepath.Join(dir, "state/slow.started"), 30*time.Second))
	require.Len(t, started, 2)
	pgid, err := strconv.Atoi(started[0])
	require.NoError(t, err)
	victim, survivor := started[1], "w1"
	if victim == "w1" {
		survivor = "w2"
	}
	require.NoError(t, byID[victim].cmd.Process.Signal(syscall.SIGKILL))
	assert.Equal(t, -int(syscall.SIGKILL), byID[victim].wait(10*time.Second))
	// The killed worker's command lives on in its own process group; it is
	// the test's to clean up.
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })

	assert.Equal(t, 0, byID[survivor].wait(time.Minute), "survivor stderr:\n%s", byID[survivor].stderr)
	assert.Contains(t, byID[survivor].stdout.String(), "==> slow.sh: passed")
	assert.Contains(t, byID[survivor].stdout.String(), "slow passed on attempt 2")

	sumPath := filepath.Join(t.TempDir(), "summary.json")
	code, rout, rerr := hopper(t, dir, baseEnv(), "report", "--build", build, "--redis", url, "--summary-out", sumPath)
	require.Equal(t, 0, code, "%s%s", rout, rerr)
	assert.Contains(t, rout, "report: build "+build+": passed")
	s := readSummary(t, sumPath)
	assert.Equal(t, map[string]int{"slow.sh": 1}, s.ReclaimCounts)
	assert.Empty(t, s.Flaky, "a reclaim does not make a unit flaky")

	code, evout, everr := hopper(t, dir, baseEnv(), "events", "--build", build, "--redis", url)
	require.Equal(t, 0, code, everr)
	evs := decodeLines(t, evout)
	assert.Equal(t, 1, countEvents(evs, "finalized", "slow.sh"), "finalized exactly once")
	for _, ev := range evs {
		switch {
		case ev["type"] == "reclaimed":
			assert.Equal(t, "slow.sh", ev["unit_id"])
			assert.Equal(t, survivor, ev["worker_id"])
			assert.Equal(t, victim, ev["previous_worker_id"])
		case ev["type"] == "finalized" && ev["unit_id"] == "slow.sh":
			assert.Equal(t, survivor, ev["worker_id"])
			assert.Equal(t, "passed", ev["outcome"])
		}
	}

	// The status view of the finished build.
	code, sout, serr := hopper(t, dir, baseEnv(), "status", "--build", build, "--redis", url, "--once")
	require.Equal(t, 0, code, serr)
	assert.Contains(t, sout, "build "+build+": complete, 3 of 3 units finalized (100%)")
	assert.Contains(t, sout, "passed 3, failed 0, flaky 0, retrying 0, reclaims 1, abandoned 0")
	assert.Regexp(t, `(?m)^WORKER\s+LAST SEEN\s+CURRENT UNIT\s+PROCESSED$`, sout)
	assert.Regexp(t, `(?m)^`+victim+`\s+\S+ ago\s+slow.sh\s+\d+$`, sout, "the killed worker still names its unit")
	assert.Regexp(t, `(?m)^`+survivor+`\s+\S+ ago\s+-\s+\d+$`, sout)
}

// hopper run gives the same verdict on the embedded server as on a real
// Redis, for the same suite.
func TestRunEmbeddedMatchesRedis(t *testing.T) {
	run := func(redis string) (summary, string) {
		dir := fixture(t, theSuite)
		sumPath := filepath.Join(dir, "summary.json")
		args := []string{"run", "-j", "3", "--timeout", "1", "--max-unit-duration", "1",
			"--max-requeues", "1", "--requeue-tolerance", "1", "--summary-out", sumPath}
		if redis != "" {
			args = append(args, "--redis", redis)
		}
		code, out, errs := hopper(t, dir, baseEnv(), append(append(args, suiteUnits...), "--", "sh", "{unit}")...)
		require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, errs)
		return readSummary(t, sumPath), errs
	}
	embedded, errs := run("")
	assert.Contains(t, errs, "on the embedded server (redis://127.0.0.1:")
	real, errs := run(redisURL(t))
	assert.Contains(t, errs, "on redis://"+redistest.NoScriptUser+":xxxxx@"+srv.Addr())
	assert.Equal(t, verdictOf(real), verdictOf(embedded))
	assert.Equal(t, "failed", embedded.Verdict)
	assert.Equal(t, []string{"hang.sh"}, embedded.Abandoned)
	assert.Equal(t, map[string]int{"hang.sh": 1}, embedded.ReclaimCounts)
	assert.Empty(t, embedded.WorkerErrors)
}

// Every usage error of docs/cli.md#refused-input gives its message and exit 2, with
// a pointer to --help.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	unitsFile := filepath.Join(dir, "units.txt")
	require.NoError(t, os.WriteFile(unitsFile, []byte("a\nb\n"), 0o644))
	work := func(args ...string) []string {
		return append(append([]string{"work", "--build", "b", "--redis", "redis://127.0.0.1:1"}, args...), "u1", "--", "true")
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"timeout zero", work("--timeout", "0"), nil, `hopper work: --timeout must be a positive number of seconds, got "0"`},
		{"timeout text", work("--timeout", "abc"), nil, `hopper work: --timeout must be a positive number of seconds, got "abc"`},
		{"max unit duration", work("--max-unit-duration", "-1"), nil, `hopper work: --max-unit-duration must be a positive number of seconds, got "-1"`},
		{"ttl", work("--ttl", "0"), nil, `hopper work: --ttl must be a positive number of seconds, got "0"`},
		{"tombstone ttl", work("--tombstone-ttl", "never"), nil, `hopper work: --tombstone-ttl must be a positive number of seconds, got "never"`},
		{"init timeout", work("--init-timeout", "0"), nil, `hopper work: --init-timeout must be a positive number of seconds, got "0"`},
		{"ttl under a millisecond", work("--ttl", "0.0005"), nil, `hopper work: --ttl must be at least 0.001 seconds (1ms), got "0.0005"`},
		{"max unit duration under a millisecond", work("--max-unit-duration", "100us"), nil, `hopper work: --max-unit-duration must be at least 0.001 seconds (1ms), got "100us"`},
		{"max unit duration plus timeout", work("--max-unit-duration", "9e9", "--timeout", "9e9"), nil, `hopper work: --max-unit-duration "9e9" plus --timeout "9e9" is past the longest duration (about 292 years)`},
		{"unit type line break", work("--unit-type", "spec\nfile"), nil, `hopper work: --unit-type "spec\nfile" has a line break`},
		{"unit type oversized", work("--unit-type", strings.Repeat("t", 1025)), nil, `hopper work: --unit-type is 1025 bytes, over 1024`},
		{"slot ids oversized", work("--worker", strings.Repeat("w", 1023), "--processes", "2"), nil, `hopper work: worker id is 1023 bytes: with --processes 2 its slot ids (<id>.1 .. <id>.2) would be up to 1025 bytes, over 1024`},
		{"run slot ids oversized", []string{"run", "--worker", strings.Repeat("w", 1022), "-j", "10", "--summary-out", "s.json", "u", "--", "true"}, nil, `hopper run: worker id is 1022 bytes: with --jobs 10 its slot ids (<id>.1 .. <id>.10) would be up to 1025 bytes, over 1024`},
		{"run report on exit", []string{"run", "--report-on-exit", "u", "--", "true"}, nil, `hopper run: --report-on-exit is for hopper work: hopper run always reports`},
		runSlotIDs(),
		{"run ttl under a millisecond", []string{"run", "--ttl", "0.0005", "--summary-out", "s.json", "u", "--", "true"}, nil, `hopper run: --ttl must be at least 0.001 seconds (1ms), got "0.0005"`},
		{"max requeues", work("--max-requeues", "-1"), nil, `hopper work: --max-requeues must be a whole number, not negative, got "-1"`},
		{"max reclaims", work("--max-reclaims", "x"), nil, `hopper work: --max-reclaims must be a whole number, not negative, got "x"`},
		{"processes", work("--processes", "0"), nil, `hopper work: --processes must be a whole number, at least 1, got "0"`},
		{"requeue tolerance", work("--requeue-tolerance", "2"), nil, `hopper work: --requeue-tolerance must be a number between 0 and 1, got "2"`},
		{"unknown flag", work("--colour"), nil, `hopper work: unknown flag --colour`},
		{"flag without value", []string{"work", "--build"}, nil, `hopper work: --build needs a value`},
		{"no build", []string{"work", "--redis", "redis://127.0.0.1:1", "u", "--", "true"}, nil, `hopper work: no build id: pass --build, set HOPPER_BUILD_ID, or run under CircleCI, Buildkite, GitHub Actions or GitLab CI`},
		{"ci without build", []string{"work", "--redis", "redis://127.0.0.1:1", "u", "--", "true"}, []string{"GITLAB_CI=true"}, `hopper work: no build id: GitLab CI is detected but its build id variable is not set`},
		{"no redis", []string{"work", "--build", "b", "u", "--", "true"}, nil, `hopper work: no Redis: pass --redis redis://HOST:PORT, or set HOPPER_REDIS_URL or REDIS_URL`},
		{"bad redis url", []string{"work", "--build", "b", "u", "--", "true"}, []string{"REDIS_URL=http://[::1"}, `hopper work: REDIS_URL "http://[::1" is not a Redis URL`},
		{"no command", []string{"work", "--build", "b", "--redis", "redis://127.0.0.1:1", "u"}, nil, `hopper work: no command: put it after --`},
		{"missing program", []string{"work", "--build", "b", "--redis", "redis://127.0.0.1:1", "u", "--", "no-such-hopper-program"}, nil, `hopper work: cannot run "no-such-hopper-program": executable file not found in $PATH`},
		{"no units", []string{"work", "--build", "b", "--redis", "redis://127.0.0.1:1", "--", "true"}, nil, `hopper work: no units: name them as arguments before --, or give --units-from FILE`},
		{"unreadable units file", []string{"work", "--build", "b", "--redis", "redis://127.0.0.1:1", "--units-from", filepath.Join(dir, "nope.txt"), "--", "true"}, nil, `hopper work: cannot read --units-from ` + filepath.Join(dir, "nope.txt") + `: no such file or directory`},
		{"unit twice", []string{"work", "--build", "b", "--redis", "redis://127.0.0.1:1", "--units-from", unitsFile, "b", "--", "true"}, nil, `hopper work: unit "b" is given twice (argument 1 and line 2 of ` + unitsFile + `)`},
		{"report flag without report", work("--html-out", "x.html"), nil, `hopper work: --html-out is for the report: give --report-on-exit too, or use hopper report`},
		{"report timeout", []string{"report", "--build", "b", "--redis", "redis://127.0.0.1:1", "--timeout", "0"}, nil, `hopper report: --timeout must be a positive number of seconds, got "0"`},
		{"report init timeout", []string{"report", "--build", "b", "--redis", "redis://127.0.0.1:1", "--init-timeout", "soon"}, nil, `hopper report: --init-timeout must be a positive number of seconds, got "soon"`},
		{"report inactive timeout", []string{"report", "--build", "b", "--redis", "redis://127.0.0.1:1", "--inactive-timeout", "-3"}, nil, `hopper report: --inactive-timeout must be a positive number of seconds, got "-3"`},
		{"report min examples", []string{"report", "--build", "b", "--redis", "redis://127.0.0.1:1", "--min-examples", "-1"}, nil, `hopper report: --min-examples must be a whole number, not negative, got "-1"`},
		{"report argument", []string{"report", "--build", "b", "--redis", "redis://127.0.0.1:1", "spec/a"}, nil, `hopper report: unexpected argument "spec/a"`},
		{"run jobs", []string{"run", "-j", "0", "u", "--", "true"}, nil, `hopper run: --jobs must be a whole number, at least 1, got "0"`},
		{"unknown command", []string{"wrok"}, nil, `hopper: unknown command "wrok"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := hopper(t, dir, baseEnv(tc.env...), tc.args...)
			assert.Equal(t, 2, code, "stderr: %s", errs)
			assert.Empty(t, out)
			assert.Contains(t, errs, tc.want)
			help := "Run 'hopper " + tc.args[0] + " --help' for usage.\n"
			if tc.name == "unknown command" {
				help = "Run 'hopper --help' for usage.\n"
			}
			assert.True(t, strings.HasSuffix(errs, help), "ends with a pointer to --help: %q", errs)
		})
	}
	assert.NoFileExists(t, filepath.Join(dir, "s.json"), "refused before anything ran")
}

// runSlotIDs is the usage error of hopper run given a worker id one byte too
// long for the slots it runs by default, one per CPU.
func runSlotIDs() (tc struct {
	name string
	args []string
	env  []string
	want string
}) {
	n := runtime.NumCPU()
	tc.name = "run slot ids oversized by the default jobs"
	if n == 1 {
		// One slot takes the worker id itself.
		tc.args = []string{"run", "--worker", strings.Repeat("w", 1025), "u", "--", "true"}
		tc.want = `hopper run: worker id is 1025 bytes, over 1024`
		return tc
	}
	size := 1024 - 1 - len(strconv.Itoa(n)) + 1
	tc.args = []string{"run", "--worker", strings.Repeat("w", size), "u", "--", "true"}
	tc.want = fmt.Sprintf("hopper run: worker id is %d bytes: with --jobs %d its slot ids (<id>.1 .. <id>.%d) would be up to 1025 bytes, over 1024", size, n, n)
	return tc
}

// --max-requeues alone retries nothing: the retry budget lets
// ceil(units × --requeue-tolerance) units be retried, none at the default 0.
// The command says so before it runs, and is quiet once both are given.
func TestRequeuesWithoutTolerance(t *testing.T) {
	dir := fixture(t, map[string]string{"bad.sh": `exit 1`})
	code, out, errs := hopper(t, dir, baseEnv(), "run", "--progress", "off", "--max-requeues", "1", "bad.sh", "--", "sh", "{unit}")
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Contains(t, errs, "hopper run: warning: --max-requeues 1 retries no unit while --requeue-tolerance is 0")
	assert.NotContains(t, out+errs, "Retrying bad.sh")

	code, out, errs = hopper(t, dir, baseEnv(), "run", "--progress", "off", "--max-requeues", "1", "--requeue-tolerance", "1", "bad.sh", "--", "sh", "{unit}")
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.NotContains(t, errs, "warning")
	assert.Contains(t, out+errs, "Retrying bad.sh")
}

// An unreachable Redis is one line and exit 2, for every command.
func TestUnreachableRedis(t *testing.T) {
	for _, args := range [][]string{
		{"work", "--build", "b", "--redis", "redis://127.0.0.1:1", "u", "--", "true"},
		{"report", "--build", "b", "--redis", "redis://127.0.0.1:1"},
		{"status", "--build", "b", "--redis", "redis://127.0.0.1:1"},
		{"events", "--build", "b", "--redis", "redis://127.0.0.1:1"},
		{"run", "--redis", "redis://127.0.0.1:1", "u", "--", "true"},
	} {
		code, out, errs := hopper(t, t.TempDir(), baseEnv(), args...)
		assert.Equal(t, 2, code, "%v: %s", args, errs)
		assert.Empty(t, out)
		assert.Regexp(t, `^hopper `+args[0]+`: cannot reach Redis at redis://127.0.0.1:1 \(from --redis\): .*connection refused\n$`, errs)
	}
}

// The exit codes of --processes and --report-on-exit (docs/cli.md#exit-codes),
// and TEST_ENV_NUMBER per slot.
func TestProcessesAndReportOnExit(t *testing.T) {
	dir := fixture(t, map[string]string{
		"a.sh": `echo "slot [$TEST_ENV_NUMBER] $HOPPER_WORKER_ID $HOPPER_BUILD_ID $HOPPER_UNIT" >> state/slots`,
		"b.sh": `echo "slot [$TEST_ENV_NUMBER] $HOPPER_WORKER_ID $HOPPER_BUILD_ID $HOPPER_UNIT" >> state/slots; sleep 0.3`,
		"c.sh": `echo "slot [$TEST_ENV_NUMBER] $HOPPER_WORKER_ID $HOPPER_BUILD_ID $HOPPER_UNIT" >> state/slots; sleep 0.3`,
		"d.sh": `echo "slot [$TEST_ENV_NUMBER] $HOPPER_WORKER_ID $HOPPER_BUILD_ID $HOPPER_UNIT" >> state/slots; sleep 0.3`,
	})
	url, build := redisURL(t), redistest.BuildID(t)
	junit := filepath.Join(dir, "junit.xml")
	// Following the log from before the build exists to its completion.
	follow := start(t, dir, baseEnv(), "events", "--build", build, "--redis", url, "--follow")
	code, out, errs := hopper(t, dir, baseEnv("HOPPER_WORKER_ID=ci"), "work", "--build", build, "--redis", url,
		"--processes", "3", "--report-on-exit", "--junit-out", junit, "a.sh", "b.sh", "c.sh", "d.sh", "--", "sh", "{unit}")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Contains(t, out, "report: build "+build+": passed")
	raw, err := os.ReadFile(filepath.Join(dir, "state/slots"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 4)
	seen := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		require.Len(t, f, 5, l)
		assert.Equal(t, build, f[3])
		slot := map[string]string{"ci.1": "[]", "ci.2": "[2]", "ci.3": "[3]"}[f[2]]
		assert.Equal(t, slot, f[1], "TEST_ENV_NUMBER of %s", f[2])
		seen[f[4]] = true
	}
	assert.Len(t, seen, 4)
	_, err = os.Stat(junit)
	assert.NoError(t, err)
	require.Equal(t, 0, follow.wait(10*time.Second), "events --follow stops once the build is complete: %s", follow.stderr)
	code, all, _ := hopper(t, dir, baseEnv(), "events", "--build", build, "--redis", url)
	require.Equal(t, 0, code)
	evs := decodeLines(t, follow.stdout.String())
	assert.Equal(t, 4, countEvents(evs, "finalized", ""))
	assert.Equal(t, all, follow.stdout.String(), "--follow printed the whole log")

	// The report's code with --report-on-exit: a failing unit gives 1, the
	// workers themselves 0.
	dir = fixture(t, map[string]string{"bad.sh": `exit 3`, "good.sh": `true`})
	build = redistest.BuildID(t)
	code, out, errs = hopper(t, dir, baseEnv(), "work", "--build", build, "--redis", url, "--report-on-exit", "bad.sh", "good.sh", "--", "sh", "{unit}")
	assert.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Contains(t, out, "failed: bad.sh (failed, worker ")
	assert.Contains(t, out, "exit status 3")
	code, _, errs = hopper(t, dir, baseEnv(), "work", "--build", build, "--redis", url, "bad.sh", "good.sh", "--", "sh", "{unit}")
	assert.Equal(t, 0, code, "a worker joining a complete build exits 0: %s", errs)

	// A worker with another suite is refused (fingerprint), exit 2.
	code, _, errs = hopper(t, dir, baseEnv(), "work", "--build", build, "--redis", url, "good.sh", "bad.sh", "--", "sh", "{unit}")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "fingerprint mismatch")
	assert.Contains(t, errs, "unit_ids")

	// With the report to follow, too: the build passed or failed on
	// another suite, and its verdict must not stand for this one (the
	// build above failed; this one passes without the refused worker).
	dir = fixture(t, map[string]string{"good.sh": `true`, "other.sh": `true`})
	build = redistest.BuildID(t)
	code, out, errs = hopper(t, dir, baseEnv(), "work", "--build", build, "--redis", url, "good.sh", "--", "sh", "{unit}")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	for _, args := range [][]string{
		{"work", "--build", build, "--redis", url, "--report-on-exit", "--summary-out", "s.json", "other.sh", "--", "sh", "{unit}"},
		{"run", "--build", build, "--redis", url, "--summary-out", "s.json", "other.sh", "--", "sh", "{unit}"},
	} {
		code, out, errs = hopper(t, dir, baseEnv(), args...)
		assert.Equal(t, 2, code, "%s: stdout:\n%s\nstderr:\n%s", args[0], out, errs)
		assert.Contains(t, errs, "fingerprint mismatch", args[0])
		assert.Contains(t, errs, "hopper "+args[0]+": no report: a worker slot failed (above)", args[0])
		assert.NotContains(t, out, "passed", args[0])
		assert.NoFileExists(t, filepath.Join(dir, "s.json"), args[0])
	}
}

// An interrupt stops the workers: the running command gets the signal (in
// its own process group, it would not see the terminal's), then hopper
// exits 2. A second interrupt kills what is left at once.
func TestInterrupt(t *testing.T) {
	dir := fixture(t, map[string]string{
		"polite.sh":   `trap 'echo "got INT" > state/polite.signal; exit 130' INT; echo $$ > state/polite.pid; while :; do sleep 0.05; done`,
		"stubborn.sh": `trap '' INT TERM; echo $$ > state/stubborn.pid; while :; do sleep 0.05; done`,
	})
	p := start(t, dir, baseEnv(), "run", "-j", "2", "--progress", "off", "polite.sh", "stubborn.sh", "--", "sh", "{unit}")
	polite, err := strconv.Atoi(waitFile(t, filepath.Join(dir, "state/polite.pid"), 30*time.Second))
	require.NoError(t, err)
	stubborn, err := strconv.Atoi(waitFile(t, filepath.Join(dir, "state/stubborn.pid"), 30*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-stubborn, syscall.SIGKILL) })

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, "got INT", waitFile(t, filepath.Join(dir, "state/polite.signal"), 10*time.Second))
	assert.Eventually(t, func() bool { return !alive(polite) }, 5*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	assert.True(t, alive(stubborn), "the stubborn unit has its grace period")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 2, p.wait(10*time.Second), "stderr:\n%s", p.stderr)
	assert.False(t, alive(stubborn), "the second interrupt killed the stubborn unit")
	assert.Contains(t, p.stderr.String(), "hopper run: interrupted")
}

// hopper run with one slot: the unit that overruns aborts the slot's
// worker, and a new worker takes the slot, reclaims the unit once its
// timeout has passed and runs the rest, so the build is judged whole
// (docs/cli.md#exit-codes: run never exits 4) instead of ending incomplete.
func TestRunGoesOnAfterAnAbort(t *testing.T) {
	dir := fixture(t, theSuite)
	sumPath := filepath.Join(dir, "summary.json")
	code, out, errs := hopper(t, dir, baseEnv("HOPPER_WORKER_ID=solo"), "run", "-j", "1", "--timeout", "1", "--max-unit-duration", "1",
		"--summary-out", sumPath, "hang.sh", "pass_a.sh", "pass_c.sh", "--", "sh", "{unit}")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	s := readSummary(t, sumPath)
	assert.Equal(t, "passed", s.Verdict)
	assert.Equal(t, 3, s.FinalizedCount)
	assert.Equal(t, []string{"hang.sh"}, s.Abandoned)
	assert.Equal(t, map[string]int{"hang.sh": 1}, s.ReclaimCounts)
	assert.Contains(t, errs, "hopper run: worker solo: aborted: hang.sh ran past 1s (max unit duration) + 1s (timeout); its slot goes on as worker solo.r2")
	assert.Contains(t, out, "pass a on solo")
	assert.Equal(t, 1, strings.Count(errs, "aborted:"), "the abort is said once:\n%s", errs)
}
