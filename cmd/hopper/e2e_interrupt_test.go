package main

import (
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An interrupted hopper run still writes the report files it was asked
// for, partial: what ran, and the units not run listed as never
// finalized; it says so, and exits 2 as an interrupt does.
func TestInterruptedRunWritesPartialReport(t *testing.T) {
	dir := fixture(t, map[string]string{
		"quick.sh": `echo quick`,
		"slow.sh":  `echo $$ > state/slow.pid; while :; do sleep 0.05; done`,
		"later.sh": `echo later`,
	})
	sumPath, junitPath := filepath.Join(dir, "out/summary.json"), filepath.Join(dir, "out/junit.xml")
	p := start(t, dir, baseEnv(), "run", "-j", "1", "--progress", "off", "--summary-out", sumPath, "--junit-out", junitPath,
		"quick.sh", "slow.sh", "later.sh", "--", "sh", "{unit}")
	pid, err := strconv.Atoi(waitFile(t, filepath.Join(dir, "state/slow.pid"), 30*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 2, p.wait(30*time.Second), "stderr:\n%s", p.stderr)
	assert.Contains(t, p.stderr.String(), "hopper run: interrupted: the report above and the files asked for are partial")
	assert.Contains(t, p.stdout.String(), "incomplete: interrupted; 1 of 3 units finalized")

	s := readSummary(t, sumPath)
	assert.Equal(t, "incomplete", s.Verdict)
	assert.Equal(t, 1, s.FinalizedCount)
	var never []string
	for _, u := range s.NeverFinalized {
		never = append(never, u.(map[string]any)["unit_id"].(string))
	}
	assert.Equal(t, []string{"slow.sh", "later.sh"}, never)
	doc := readJUnit(t, junitPath)
	require.NotEmpty(t, doc.Suites)
	assert.Equal(t, 2, doc.Suites[0].Errors, "the units not run are errors in the JUnit")
}
