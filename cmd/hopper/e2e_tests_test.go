package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goTestModule writes a Go module whose packages are the units: pass (one
// test), fail (a passing and two failing tests), flaky (a test that fails
// on its package's first attempt, counted in $FLAKY_STATE), and two shell
// units: junit.sh writes a JUnit file to $HOPPER_JUNIT and fails, plain.sh
// gives no per-test results at all.
func goTestModule(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":              "module example.com/units\n\ngo 1.21\n",
		"pass/pass_test.go":   "package pass\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"fail/fail_test.go":   "package fail\n\nimport \"testing\"\n\nfunc TestGood(t *testing.T) {}\n\nfunc TestBad(t *testing.T) { t.Errorf(\"got 1, want 2\") }\n\nfunc TestAlsoBad(t *testing.T) { t.Fatal(\"broken\") }\n",
		"flaky/flaky_test.go": flakyTest,
		"junit.sh": `cat > "$HOPPER_JUNIT" <<'XML'
<testsuite name="shell"><testcase name="works" classname="shell" time="0.5"/><testcase name="breaks" classname="shell"><failure message="expected true">false</failure></testcase></testsuite>
XML
exit 1`,
		"plain.sh": `echo plain`,
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	return dir
}

const flakyTest = `package flaky

import (
	"os"
	"testing"
)

func TestSteady(t *testing.T) {}

func TestFlaky(t *testing.T) {
	state := os.Getenv("FLAKY_STATE")
	if _, err := os.Stat(state); err != nil {
		os.WriteFile(state, []byte("x"), 0o644)
		t.Fatal("first attempt fails")
	}
}
`

// gitlabJUnit is the JUnit shape GitLab's parser reads: suites of cases,
// a failure's message and text, Surefire's flakyFailure and rerunFailure.
type gitlabJUnit struct {
	XMLName xml.Name `xml:"testsuites"`
	Time    string   `xml:"time,attr"`
	Tests   int      `xml:"tests,attr"`
	Suites  []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Time     string `xml:"time,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Flaky []struct {
				Message string `xml:"message,attr"`
			} `xml:"flakyFailure"`
			Rerun []struct {
				Message string `xml:"message,attr"`
			} `xml:"rerunFailure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// Units run as go test -json (and one writing $HOPPER_JUNIT) give one
// JUnit test case per test, in a suite per unit: the final attempt's
// result, earlier failures as flakyFailure (passed in the end) or
// rerunFailure; a unit without per-test results one case as before. The
// summary names the failed and flaky tests per unit.
func TestPerTestJUnit(t *testing.T) {
	dir := goTestModule(t)
	url := redisURL(t)
	junitPath, sumPath := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.json")
	env := baseEnv("FLAKY_STATE="+filepath.Join(dir, "flaky.state"), "GOFLAGS=-count=1", "GOCACHE="+goCache(t))
	code, out, errs := hopper(t, dir, env, "run", "--redis", url, "-j", "2", "--progress", "off",
		"--max-requeues", "1", "--requeue-tolerance", "1", "--junit-out", junitPath, "--summary-out", sumPath,
		"pass", "fail", "flaky", "junit.sh", "plain.sh", "--",
		"sh", "-c", `case "$HOPPER_UNIT" in *.sh) exec sh "$HOPPER_UNIT";; *) exec go test -json "./$HOPPER_UNIT";; esac`)
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Contains(t, out, "failed tests of fail: TestBad, TestAlsoBad\n")

	raw, err := os.ReadFile(junitPath)
	require.NoError(t, err)
	var doc gitlabJUnit
	require.NoError(t, xml.Unmarshal(raw, &doc), "%s", raw)
	suites := map[string]int{}
	for i, s := range doc.Suites {
		suites[s.Name] = i
	}
	type kase struct {
		failure, flaky, rerun string
	}
	cases := func(unit string) map[string]kase {
		i, ok := suites[unit]
		require.True(t, ok, "no suite %q in\n%s", unit, raw)
		got := map[string]kase{}
		for _, c := range doc.Suites[i].Cases {
			var k kase
			if c.Failure != nil {
				k.failure = c.Failure.Message
				assert.NotEmpty(t, c.Failure.Text, "%s/%s: a failure carries the test's output", unit, c.Name)
			}
			for _, f := range c.Flaky {
				k.flaky += f.Message
			}
			for _, f := range c.Rerun {
				k.rerun += f.Message
			}
			got[c.Name] = k
		}
		return got
	}
	assert.Equal(t, map[string]kase{"TestOK": {}}, cases("pass"))
	assert.Equal(t, map[string]kase{
		"TestGood":    {},
		"TestBad":     {failure: "fail_test.go:7: got 1, want 2", rerun: "fail_test.go:7: got 1, want 2"},
		"TestAlsoBad": {failure: "fail_test.go:9: broken", rerun: "fail_test.go:9: broken"},
	}, cases("fail"))
	assert.Equal(t, map[string]kase{"TestSteady": {}, "TestFlaky": {flaky: "flaky_test.go:14: first attempt fails"}}, cases("flaky"))
	assert.Equal(t, map[string]kase{"works": {}, "breaks": {failure: "expected true", rerun: "expected true"}}, cases("junit.sh"))
	build := doc.Suites[0]
	require.Len(t, build.Cases, 1, "the build's own suite holds the units without per-test results")
	assert.Equal(t, "plain.sh", build.Cases[0].Name)
	assert.Equal(t, "example.com/units/fail", doc.Suites[suites["fail"]].Cases[0].Classname)
	assert.Equal(t, 2, doc.Suites[suites["fail"]].Failures)

	wall, err := strconv.ParseFloat(doc.Time, 64)
	require.NoError(t, err)
	assert.Positive(t, wall)
	assert.Equal(t, doc.Time, build.Time, "the suites' time is the build's wall time")

	s := readTestsSummary(t, sumPath)
	assert.Equal(t, map[string][]string{"fail": {"TestBad", "TestAlsoBad"}, "junit.sh": {"breaks"}}, s.FailedTests)
	assert.Equal(t, map[string][]string{"flaky": {"TestFlaky"}}, s.FlakyTests)
}

type testsSummary struct {
	FailedTests map[string][]string `json:"failed_tests"`
	FlakyTests  map[string][]string `json:"flaky_tests"`
}

func readTestsSummary(t testing.TB, path string) testsSummary {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var s testsSummary
	require.NoError(t, json.Unmarshal(raw, &s), "%s", raw)
	return s
}

// goCache is the go command's build cache for the units' go test: the
// test's own, or a fresh folder.
func goCache(t testing.TB) string {
	if c := os.Getenv("GOCACHE"); c != "" {
		return c
	}
	if home, err := os.UserCacheDir(); err == nil {
		return filepath.Join(home, "go-build")
	}
	return t.TempDir()
}

// The members of a go test -json {units} batch keep their own tests: the
// per-test JUnit names a batch's failed test under its unit's suite, and
// its passing neighbour's tests under its own.
func TestBatchPerTestJUnit(t *testing.T) {
	dir := goTestModule(t)
	url := redisURL(t)
	junitPath, sumPath := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.json")
	env := baseEnv("GOFLAGS=-count=1", "GOCACHE="+goCache(t))
	code, out, errs := hopper(t, dir, env, "run", "--redis", url, "-j", "1", "--progress", "off", "--timings", "off",
		"--batch", "2", "--max-requeues", "0", "--junit-out", junitPath, "--summary-out", sumPath,
		"./pass", "./fail", "--", "go", "test", "-json", "{units}")
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, errs)

	raw, err := os.ReadFile(junitPath)
	require.NoError(t, err)
	var doc gitlabJUnit
	require.NoError(t, xml.Unmarshal(raw, &doc), "%s", raw)
	cases := map[string]map[string]string{} // suite to case to failure message
	for _, s := range doc.Suites {
		cases[s.Name] = map[string]string{}
		for _, c := range s.Cases {
			msg := ""
			if c.Failure != nil {
				msg = c.Failure.Message
			}
			cases[s.Name][c.Name] = msg
		}
	}
	assert.Equal(t, map[string]string{"TestOK": ""}, cases["./pass"], "%s", raw)
	assert.Equal(t, map[string]string{
		"TestGood": "", "TestBad": "fail_test.go:7: got 1, want 2", "TestAlsoBad": "fail_test.go:9: broken",
	}, cases["./fail"], "%s", raw)
	s := readTestsSummary(t, sumPath)
	assert.Equal(t, map[string][]string{"./fail": {"TestBad", "TestAlsoBad"}}, s.FailedTests)
}
