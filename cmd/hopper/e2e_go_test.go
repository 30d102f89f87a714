package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goModule writes a Go module of the given files (paths relative to its
// root) and returns its folder.
func goModule(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/gm\n\ngo 1.21\n"
	for name, body := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	return dir
}

// goEnv is the environment of a --go hopper: the test's go build cache,
// so that the binaries' dependencies are compiled once.
func goEnv(t testing.TB, extra ...string) []string {
	return baseEnv(append([]string{"GOCACHE=" + goCache(t)}, extra...)...)
}

// buildKeys counts the keys a build has from its first worker on (its
// leader lease, workers, meta, units, tombstone): none when nothing was
// published.
func buildKeys(t testing.TB, build string) int {
	t.Helper()
	c := srv.Client(t)
	k := queue.BuildKeys(build)
	n, err := c.Do(ctxTimeout(t, 5*time.Second), c.B().Exists().Key(k.Exists, k.Meta, k.Units, k.UnitState, k.Leader, k.Workers).Build()).AsInt64()
	require.NoError(t, err)
	return int(n)
}

// Each flag of go test that makes no sense under --go, and patterns that
// match no package with tests, are usage errors that name them; nothing is
// published.
func TestGoRefusedInput(t *testing.T) {
	dir := goModule(t, map[string]string{
		"ok/ok_test.go": "package ok\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"lib/lib.go":    "package lib\n",
	})
	url := redisURL(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "./..."}, "go test flag -c is not taken with --go"},
		{[]string{"-o", "x", "./..."}, "go test flag -o is not taken with --go"},
		{[]string{"-json", "./..."}, "go test flag -json is not taken with --go"},
		{[]string{"-exec", "sudo", "./..."}, "go test flag -exec is not taken with --go"},
		{[]string{"-list", ".", "./..."}, "go test flag -list is not taken with --go"},
		{[]string{"-fuzz", "F", "./ok"}, "go test flag -fuzz is not taken with --go"},
		{[]string{"-coverprofile=c.out", "./..."}, "go test flag -coverprofile is not taken with --go"},
		{[]string{"-bogus", "./..."}, "unknown go test flag -bogus"},
		{[]string{"./nothing/..."}, "./nothing/"},
		{[]string{"./lib"}, "no packages with tests: ./lib matched 1 package(s), none with test files"},
	} {
		build := redistest.BuildID(t)
		code, out, errs := hopper(t, dir, goEnv(t), append([]string{"run", "--go", "--redis", url, "--build", build, "--progress", "off", "--"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v: stdout:\n%s\nstderr:\n%s", tc.args, out, errs)
		assert.Contains(t, errs, tc.want, "%v", tc.args)
		assert.Contains(t, errs, "Run 'hopper run --help' for usage.", "%v", tc.args)
		assert.Zero(t, buildKeys(t, build), "%v: nothing is published", tc.args)
	}
}

// A package whose tests do not compile, or whose dependency does not, is
// a failed unit carrying the compiler's output; its neighbours run and
// pass.
func TestGoCompileFailure(t *testing.T) {
	dir := goModule(t, map[string]string{
		"ok/ok_test.go":         "package ok\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"broken/broken_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) { x := 1 }\n",
		"lib/lib.go":            "package lib\n\nfunc F() int { return \"one\" }\n",
		"uses/uses_test.go":     "package uses\n\nimport (\n\t\"testing\"\n\n\t\"example.com/gm/lib\"\n)\n\nfunc TestUses(t *testing.T) { lib.F() }\n",
	})
	url, build := redisURL(t), redistest.BuildID(t)
	sumPath := filepath.Join(dir, "summary.json")
	code, out, errs := hopper(t, dir, goEnv(t), "run", "--go", "--redis", url, "--build", build, "-j", "2", "--progress", "off",
		"--max-requeues", "1", "--requeue-tolerance", "1", "--summary-out", sumPath, "--", "./...")
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Contains(t, out, "broken_test.go:5:33: declared and not used: x")
	assert.Contains(t, out, "FAIL\texample.com/gm/broken [build failed]\n")
	assert.Regexp(t, `ok  \texample.com/gm/ok\t\d+\.\d{3}s\n`, out)
	assert.Contains(t, out, "FAIL\texample.com/gm/uses [build failed]\n")
	s := readSummary(t, sumPath)
	require.Len(t, s.Failed, 2)
	messages := map[string]string{}
	for _, f := range s.Failed {
		require.NotEmpty(t, f.Errors, f.UnitID)
		assert.Equal(t, "build failed", f.Errors[0].Class, f.UnitID)
		messages[f.UnitID] = f.Errors[0].Message
	}
	assert.Contains(t, messages["example.com/gm/broken"], "declared and not used: x")
	assert.Contains(t, messages["example.com/gm/uses"], `lib/lib.go:3:23: cannot use "one"`)
	assert.Equal(t, 3, s.TotalUnits, "lib has no tests")
}

// thirtyTests is a package of 30 tests; TestT17 fails on its first run
// only. Every test appends its name to $RUNLOG when it runs.
func thirtyTests() string {
	var b strings.Builder
	b.WriteString("package thirty\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n")
	b.WriteString("func ran(t *testing.T) {\n\tf, _ := os.OpenFile(os.Getenv(\"RUNLOG\"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)\n\tf.WriteString(t.Name() + \"\\n\")\n\tf.Close()\n}\n\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "func TestT%02d(t *testing.T) {\n\tran(t)\n", i)
		if i == 17 {
			b.WriteString("\tif _, err := os.Stat(os.Getenv(\"FLAKY_STATE\")); err != nil {\n\t\tos.WriteFile(os.Getenv(\"FLAKY_STATE\"), nil, 0o644)\n\t\tt.Fatal(\"first run fails\")\n\t}\n")
		}
		b.WriteString("}\n\n")
	}
	return b.String()
}

// One retry allowed, of a package of 30 tests one of which fails on its
// first run: the retry runs that test alone, the build passes, and the
// JUnit keeps all 30 tests with the one marked flaky.
func TestGoRetryRunsOnlyTheFailedTest(t *testing.T) {
	dir := goModule(t, map[string]string{"thirty/thirty_test.go": thirtyTests()})
	url, build := redisURL(t), redistest.BuildID(t)
	runlog := filepath.Join(dir, "runlog")
	junitPath, sumPath := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.json")
	env := goEnv(t, "RUNLOG="+runlog, "FLAKY_STATE="+filepath.Join(dir, "flaky.state"))
	code, out, errs := hopper(t, dir, env, "run", "--go", "--redis", url, "--build", build, "-j", "1", "--progress", "off",
		"--max-requeues", "1", "--requeue-tolerance", "1", "--junit-out", junitPath, "--summary-out", sumPath, "--", "./...")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Contains(t, out, "hopper: ran again only TestT17")
	assert.Contains(t, out, "units: 1 total, 1 finalized; tests: 30, 0 failed", "the tests are counted, not the unit")

	raw, err := os.ReadFile(runlog)
	require.NoError(t, err)
	runs := strings.Fields(string(raw))
	assert.Len(t, runs, 31, "30 tests, then TestT17 alone")
	assert.Equal(t, "TestT17", runs[len(runs)-1])

	raw, err = os.ReadFile(junitPath)
	require.NoError(t, err)
	var doc gitlabJUnit
	require.NoError(t, xml.Unmarshal(raw, &doc), "%s", raw)
	var cases, flaky []string
	for _, s := range doc.Suites {
		if s.Name != "example.com/gm/thirty" {
			continue
		}
		for _, c := range s.Cases {
			cases = append(cases, c.Name)
			assert.Nil(t, c.Failure, c.Name)
			if len(c.Flaky) > 0 {
				flaky = append(flaky, c.Name)
				assert.Equal(t, "thirty_test.go:82: first run fails", c.Flaky[0].Message)
			}
		}
	}
	assert.Len(t, cases, 30, "%s", raw)
	assert.Equal(t, []string{"TestT17"}, flaky)
	s := readTestsSummary(t, sumPath)
	assert.Equal(t, map[string][]string{"example.com/gm/thirty": {"TestT17"}}, s.FlakyTests)
}

// retryElsewhere is a package whose TestF fails on its first run, and
// hangs on a retry by worker w1; every test logs "<worker> <test>" to
// $RUNLOG.
const retryElsewhere = `package flaky

import (
	"os"
	"testing"
	"time"
)

func ran(t *testing.T) {
	f, _ := os.OpenFile(os.Getenv("RUNLOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	f.WriteString(os.Getenv("HOPPER_WORKER_ID") + " " + t.Name() + "\n")
	f.Close()
}

func TestA(t *testing.T) { ran(t) }

func TestB(t *testing.T) { ran(t) }

func TestF(t *testing.T) {
	ran(t)
	state := os.Getenv("FLAKY_STATE")
	if _, err := os.Stat(state); err != nil {
		os.WriteFile(state, nil, 0o644)
		t.Fatal("first run fails")
	}
	if os.Getenv("HOPPER_WORKER_ID") == "w1" {
		os.WriteFile(state+".hung", []byte("hung\n"), 0o644)
		time.Sleep(10 * time.Minute)
	}
}
`

// The retry of a failed attempt that another process ran reads that
// attempt's results from the build: w1's retry of TestF hangs and w1 is
// killed; w2 reclaims the retry, runs TestF alone, and the JUnit keeps
// TestA and TestB from w1's first attempt, with TestF flaky.
func TestGoRetryInAnotherProcess(t *testing.T) {
	dir := goModule(t, map[string]string{"flaky/flaky_test.go": retryElsewhere})
	url, build := redisURL(t), redistest.BuildID(t)
	runlog, state := filepath.Join(dir, "runlog"), filepath.Join(dir, "flaky.state")
	env := goEnv(t, "RUNLOG="+runlog, "FLAKY_STATE="+state)
	args := func(id string) []string {
		return []string{"work", "--go", "--build", build, "--worker", id, "--redis", url, "--timeout", "1.5",
			"--max-requeues", "1", "--requeue-tolerance", "1", "--progress", "off", "--timings", "off", "--", "./..."}
	}
	w1 := start(t, dir, env, args("w1")...)
	waitFile(t, state+".hung", time.Minute)
	require.NoError(t, w1.cmd.Process.Signal(syscall.SIGKILL))
	w1.wait(10 * time.Second)
	t.Cleanup(func() { killTestBinaries(t, dir) })
	killTestBinaries(t, dir)

	w2 := start(t, dir, env, args("w2")...)
	require.Equal(t, 0, w2.wait(time.Minute), "w2 stderr:\n%s", w2.stderr)
	assert.Contains(t, w2.stdout.String(), "hopper: ran again only TestF")
	raw, err := os.ReadFile(runlog)
	require.NoError(t, err)
	assert.Equal(t, "w1 TestA\nw1 TestB\nw1 TestF\nw1 TestF\nw2 TestF\n", string(raw))

	junitPath := filepath.Join(dir, "junit.xml")
	code, out, errs := hopper(t, dir, baseEnv(), "report", "--build", build, "--redis", url, "--timeout", "20", "--junit-out", junitPath)
	require.Equal(t, 0, code, "%s%s", out, errs)
	raw, err = os.ReadFile(junitPath)
	require.NoError(t, err)
	var doc gitlabJUnit
	require.NoError(t, xml.Unmarshal(raw, &doc), "%s", raw)
	flaky := map[string]bool{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if s.Name == "example.com/gm/flaky" {
				flaky[c.Name] = len(c.Flaky) > 0
			}
		}
	}
	assert.Equal(t, map[string]bool{"TestA": false, "TestB": false, "TestF": true}, flaky, "%s", raw)
}

// killTestBinaries kills the test binaries a killed worker left running
// under dir's packages (each in a process group of its own).
func killTestBinaries(t testing.TB, dir string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && strings.HasPrefix(cwd, dir+"/") {
			if pgid, err := syscall.Getpgid(pid); err == nil {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		}
	}
}
