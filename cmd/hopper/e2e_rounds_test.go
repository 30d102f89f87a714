package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitlabJob is the environment GitLab gives job index i of a parallel job
// in a pipeline, under job id jobID.
func gitlabJob(pipeline string, i, jobID int) []string {
	return baseEnv("GITLAB_CI=true", "CI_PIPELINE_ID="+pipeline, fmt.Sprintf("CI_NODE_INDEX=%d", i),
		fmt.Sprintf("CI_JOB_NAME=tests %d/3", i), fmt.Sprintf("CI_JOB_ID=%d", jobID))
}

// runs reads how many times each unit of the fixture ran.
func runs(t testing.TB, dir string, units ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, u := range units {
		b, err := os.ReadFile(filepath.Join(dir, "state", u+".count"))
		if err == nil {
			out[u] = strings.TrimSpace(string(b))
		}
	}
	return out
}

// A GitLab retry of a failed pipeline keeps CI_PIPELINE_ID (the build id)
// and gives the jobs new CI_JOB_IDs: the retried workers, three arriving
// at once, open exactly one new round, which runs exactly the units that
// did not pass; the report then judges the whole build, passed, saying
// which round each result is from. A worker of the same job id, or a
// retry of a passed build, runs nothing.
func TestRetryRoundRunsOnlyWhatDidNotPass(t *testing.T) {
	dir := fixture(t, map[string]string{
		"a.sh":  `echo a`,
		"b.sh":  `echo b`,
		"f1.sh": `if [ $n -lt 2 ]; then echo "f1 fails on attempt $n"; exit 1; fi; sleep 0.3`,
		"f2.sh": `if [ $n -lt 2 ]; then echo "f2 fails on attempt $n"; exit 1; fi; sleep 0.3`,
	})
	url, pipeline := redisURL(t), redistest.BuildID(t)
	units := []string{"a.sh", "b.sh", "f1.sh", "f2.sh"}
	work := func(env []string) *proc {
		return start(t, dir, env, append(append([]string{"work", "--redis", url, "--progress", "off"}, units...), "--", "sh", "{unit}")...)
	}
	report := func(env []string) (int, summary, string) {
		sumPath := filepath.Join(t.TempDir(), "summary.json")
		code, out, errs := hopper(t, dir, env, "report", "--redis", url, "--summary-out", sumPath)
		require.NotEqual(t, 2, code, "stdout:\n%s\nstderr:\n%s", out, errs)
		return code, readSummary(t, sumPath), out
	}

	// The pipeline: three jobs, two units fail.
	first := []*proc{work(gitlabJob(pipeline, 1, 101)), work(gitlabJob(pipeline, 2, 102)), work(gitlabJob(pipeline, 3, 103))}
	for _, p := range first {
		require.Equal(t, 0, p.wait(time.Minute), "stderr:\n%s", p.stderr)
	}
	code, s, _ := report(gitlabJob(pipeline, 1, 104))
	require.Equal(t, 1, code)
	assert.ElementsMatch(t, []string{"f1.sh", "f2.sh"}, failedUnits(s))

	// Retry: the three jobs again, new job ids, at once.
	retried := []*proc{work(gitlabJob(pipeline, 1, 201)), work(gitlabJob(pipeline, 2, 202)), work(gitlabJob(pipeline, 3, 203))}
	var stderr strings.Builder
	for _, p := range retried {
		require.Equal(t, 0, p.wait(time.Minute), "stderr:\n%s", p.stderr)
		stderr.WriteString(p.stderr.String())
	}
	assert.Equal(t, 1, strings.Count(stderr.String(), "opened round 2 of build "+pipeline+": 2 unit(s)"), "one round opened:\n%s", stderr.String())
	assert.Equal(t, map[string]string{"a.sh": "1", "b.sh": "1", "f1.sh": "2", "f2.sh": "2"}, runs(t, dir, units...),
		"the round ran exactly the units that did not pass")

	code, s, out := report(gitlabJob(pipeline, 1, 204))
	assert.Equal(t, 0, code, "the build passes once its retry passes:\n%s", out)
	assert.Equal(t, "passed", s.Verdict)
	assert.Equal(t, 4, s.FinalizedCount)
	assert.ElementsMatch(t, []string{"f1.sh", "f2.sh"}, s.Flaky)
	assert.Contains(t, out, "rounds: 2")

	code, evout, everr := hopper(t, dir, baseEnv(), "events", "--build", pipeline, "--redis", url)
	require.Equal(t, 0, code, everr)
	evs := decodeLines(t, evout)
	assert.Equal(t, 1, countEvents(evs, "round_opened", ""), "exactly one round opened")
	for _, ev := range evs {
		if ev["type"] == "finalized" && (ev["unit_id"] == "f1.sh" || ev["unit_id"] == "f2.sh") && ev["outcome"] == "passed" {
			assert.Equal(t, float64(2), ev["round"], "the round's events carry it: %v", ev)
		}
		if ev["type"] == "finalized" && ev["unit_id"] == "a.sh" {
			assert.NotContains(t, ev, "round", "round 1's events are the reference's")
		}
	}
	assert.Equal(t, 6, countEvents(evs, "finalized", ""), "one finalized per unit per round")

	// The same job again, and a retry of the passed build: nothing runs.
	for _, env := range [][]string{gitlabJob(pipeline, 2, 202), gitlabJob(pipeline, 2, 302)} {
		p := work(env)
		require.Equal(t, 0, p.wait(time.Minute), "stderr:\n%s", p.stderr)
		assert.NotContains(t, p.stderr.String(), "opened round")
	}
	assert.Equal(t, map[string]string{"a.sh": "1", "b.sh": "1", "f1.sh": "2", "f2.sh": "2"}, runs(t, dir, units...))
}

func failedUnits(s summary) []string {
	var out []string
	for _, f := range s.Failed {
		out = append(out, f.UnitID)
	}
	return out
}
