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
	assert.Contains(t, out, "fingerprint mismatch (differing inputs: unit_ids); no verdict")
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

// A worker given another command and revision names both inputs with
// their values, in its own line and in the report (issue 43: the report
// garbled the line and never showed the two commands).
func TestRefusedJoinNamesTheValues(t *testing.T) {
	dir := fixture(t, map[string]string{"a.sh": `true`})
	url, build := redisURL(t), redistest.BuildID(t)
	code, out, errs := hopper(t, dir, baseEnv(), "work", "--build", build, "--redis", url, "--worker", "w1", "--revision", "r1", "a.sh", "--", "sh", "{unit}")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	code, _, errs = hopper(t, dir, baseEnv(), "work", "--build", build, "--redis", url, "--worker", "w2", "--revision", "r2", "a.sh", "--", "sh", "-e", "{unit}")
	require.Equal(t, 2, code, errs)
	want := "worker w2 refused build " + build + ": fingerprint mismatch, another suite (differing inputs: command, revision): command: here `sh -e {unit}`, the build's `sh {unit}`; revision: here r2, the build's r1"
	assert.Contains(t, errs, "hopper work: "+want+"; every worker of a build")

	code, out, _ = hopper(t, dir, baseEnv(), "report", "--build", build, "--redis", url)
	assert.Equal(t, 2, code)
	assert.Contains(t, out, "infrastructure: 1 worker refused to join build "+build+": fingerprint mismatch (differing inputs: command, revision); no verdict, since the units only its suite has were never run\n")
	assert.Contains(t, out, "refused: worker w2: "+want)
}
