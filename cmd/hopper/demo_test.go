package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `make demo` (demo/run.sh) with the binary under test: the build fails as
// the demo means it to, and the reports it points to say what the suite in
// demo/suite does: quick passes, one flaky unit, one hard failure and one
// unit that hangs, is abandoned and passes when reclaimed. It needs no
// Redis: `hopper run` starts its embedded server.
func TestDemo(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	scripts, err := filepath.Glob(filepath.Join(root, "demo", "suite", "*_test.sh"))
	require.NoError(t, err)
	var units []string
	for _, s := range scripts {
		units = append(units, "demo/suite/"+filepath.Base(s))
	}
	const (
		broken = "demo/suite/broken_test.sh"
		flaky  = "demo/suite/flaky_test.sh"
		hang   = "demo/suite/hang_test.sh"
	)
	require.Subset(t, units, []string{broken, flaky, hang})

	// run.sh writes to ${TMPDIR:-/tmp}/hopper-demo, which it empties first.
	tmp := t.TempDir()
	out := filepath.Join(tmp, "hopper-demo")
	cmd := exec.CommandContext(ctxTimeout(t, 2*time.Minute), "bash", filepath.Join(root, "demo", "run.sh"), hopperBin)
	cmd.Dir, cmd.Env = root, baseEnv("TMPDIR="+tmp)
	cmd.WaitDelay = 10 * time.Second // a unit left running must not hold the test on its pipes
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, err, "demo/run.sh exits 0 only when hopper run exits 1\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("hopper: data race:\n%s", &stderr)
	}

	text := stdout.String()
	assert.Contains(t, text, "hopper run exited 1. Reports: "+filepath.Join(out, "report.html"))
	assert.Contains(t, text, "The demo build fails on purpose")
	assert.Regexp(t, `(?m)^report: build run-\S+: failed$`, text)
	assert.Contains(t, text, fmt.Sprintf("\n  %d of %d units failed\n", 1, len(units)))
	assert.Contains(t, text, "\n  flaky (passed after requeue): "+flaky+"\n")
	assert.Contains(t, text, "\n  abandoned (exceeded --max-unit-duration): "+hang+"\n")

	s := readSummary(t, filepath.Join(out, "summary.json"))
	assert.Equal(t, "failed", s.Verdict)
	assert.Equal(t, 1, s.ExitCode)
	assert.Equal(t, len(units), s.TotalUnits)
	assert.Equal(t, len(units), s.FinalizedCount, "every unit finalized")
	require.Len(t, s.Failed, 1)
	assert.Equal(t, broken, s.Failed[0].UnitID)
	assert.Equal(t, "retry_budget_exhausted", s.Failed[0].Reason)
	require.NotEmpty(t, s.Failed[0].Errors)
	assert.Contains(t, s.Failed[0].Errors[0].Message, "not ok - answer: expected 42, got 41")
	assert.Equal(t, []string{flaky}, s.Flaky)
	assert.Equal(t, []string{hang}, s.Abandoned)
	assert.Empty(t, s.NeverFinalized)
	assert.Equal(t, map[string]int{broken: 2, flaky: 1}, s.RetryCounts, "--max-requeues 2")
	assert.Equal(t, map[string]int{hang: 1}, s.ReclaimCounts)
	assert.Empty(t, s.WorkerErrors)
	passed := s.FinalizedCount - len(s.Failed)
	assert.Equal(t, len(units)-1, passed, "every unit but %s passes", broken)

	raw, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	require.NoError(t, err)
	var doc junitDoc
	require.NoError(t, xml.Unmarshal(raw, &doc), "JUnit is well-formed XML:\n%s", raw)
	require.Len(t, doc.Suites, 1)
	assert.Equal(t, len(units), doc.Suites[0].Tests)
	var failing []string
	for _, c := range doc.Suites[0].Cases {
		if c.Failure != nil || c.Error != nil {
			failing = append(failing, c.Name)
		}
	}
	assert.Equal(t, []string{broken}, failing)

	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	require.NoError(t, err)
	html := string(page)
	assert.Contains(t, html, `<span class="verdict failed">failed</span>`)
	assert.Contains(t, html, "not ok - answer: expected 42, got 41", "the hard failure's error")
	assert.Contains(t, html, "not ok - the service answered: expected yes, got timeout", "the flaky unit's failed attempt")
	for _, ref := range []string{`src="http`, `href="http`, "<link "} {
		assert.NotContains(t, html, ref, "the report needs no network")
	}
}
