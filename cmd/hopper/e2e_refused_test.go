package main

import (
	"path/filepath"
	"testing"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker given another unit list on the same build id is refused; the
// build then ran only the first list, so hopper report must not pass it:
// infrastructure, exit 2, naming the differing input.
func TestReportRefusedJoinIsInfrastructure(t *testing.T) {
	dir := fixture(t, map[string]string{"good.sh": `true`, "only_second.sh": `true`})
	url, build := redisURL(t), redistest.BuildID(t)
	code, out, errs := hopper(t, dir, baseEnv(), "work", "--build", build, "--redis", url, "--worker", "w1", "good.sh", "--", "sh", "{unit}")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	code, _, errs = hopper(t, dir, baseEnv(), "work", "--build", build, "--redis", url, "--worker", "w2", "good.sh", "only_second.sh", "--", "sh", "{unit}")
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, "fingerprint mismatch")

	sumPath, junitPath := filepath.Join(dir, "summary.json"), filepath.Join(dir, "junit.xml")
	code, out, errs = hopper(t, dir, baseEnv(), "report", "--build", build, "--redis", url, "--summary-out", sumPath, "--junit-out", junitPath)
	assert.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Contains(t, out, "report: build "+build+": refused\n")
	assert.Contains(t, out, "fingerprint mismatch (differing inputs: unit_ids)")
	assert.Contains(t, out, "refused: worker w2: ")
	assert.NotContains(t, out, "passed")
	s := readSummary(t, sumPath)
	assert.Equal(t, "refused", s.Verdict)
	assert.Equal(t, 2, s.ExitCode)
	assert.Equal(t, 1, s.FinalizedCount, "the first list ran whole")
	doc := readJUnit(t, junitPath)
	require.Len(t, doc.Suites, 1)
	assert.Equal(t, 1, doc.Suites[0].Errors, "the refusal is an error case")
}
