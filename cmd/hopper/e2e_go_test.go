package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	return baseEnv(append([]string{"GOCACHE=" + goCache(t), "GOPATH=" + os.Getenv("GOPATH"), "GOFLAGS=-mod=mod"}, extra...)...)
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

// A package whose tests do not compile is a failed unit carrying the
// compiler's output; its neighbours run and pass.
func TestGoCompileFailure(t *testing.T) {
	dir := goModule(t, map[string]string{
		"ok/ok_test.go":         "package ok\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"broken/broken_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) { x := 1 }\n",
	})
	url, build := redisURL(t), redistest.BuildID(t)
	sumPath := filepath.Join(dir, "summary.json")
	code, out, errs := hopper(t, dir, goEnv(t), "run", "--go", "--redis", url, "--build", build, "-j", "2", "--progress", "off",
		"--max-requeues", "1", "--requeue-tolerance", "1", "--summary-out", sumPath, "--", "./...")
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Contains(t, out, "broken_test.go:5:33: declared and not used: x")
	assert.Contains(t, out, "FAIL\texample.com/gm/broken [build failed]\n")
	assert.Regexp(t, `ok  \texample.com/gm/ok\t\d+\.\d{3}s\n`, out)
	s := readSummary(t, sumPath)
	require.Len(t, s.Failed, 1)
	assert.Equal(t, "example.com/gm/broken", s.Failed[0].UnitID)
	require.NotEmpty(t, s.Failed[0].Errors)
	assert.Equal(t, "build failed", s.Failed[0].Errors[0].Class)
	assert.Contains(t, s.Failed[0].Errors[0].Message, "declared and not used: x")
	assert.Equal(t, 2, s.TotalUnits)
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
