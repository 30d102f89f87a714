package cli

import (
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/embedded"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunLeavesREDIS_URLAlone: hopper run stays on its embedded server
// when only REDIS_URL is set, and says it left it alone; HOPPER_REDIS_URL
// and --redis move it (issue 43: REDIS_URL moved run into an application's
// database).
func TestRunLeavesREDIS_URLAlone(t *testing.T) {
	resolveRun := func(env Env, args ...string) target {
		f := newFlagSet("run")
		wf := addWorkFlags(f, "jobs", "j")
		wf.target.redisVars = runRedisVars
		_, _, err := f.Parse(args)
		require.NoError(t, err)
		o, err := wf.resolve(f, env, "jobs", false)
		require.NoError(t, err)
		return o.target
	}
	assert.Equal(t, "", resolveRun(Env{"REDIS_URL": "redis://10.0.0.9:6379/3"}).Redis)
	tg := resolveRun(Env{"REDIS_URL": "redis://app:6379/3", "HOPPER_REDIS_URL": "redis://ci:6379"})
	assert.Equal(t, "redis://ci:6379 (from HOPPER_REDIS_URL)", tg.redisShown())
	tg = resolveRun(Env{"REDIS_URL": "redis://app:6379/3"}, "--redis", "redis://u:pw@ci:6379")
	assert.Equal(t, "redis://u:xxxxx@ci:6379 (from --redis)", tg.redisShown())

	// Nothing listens on port 1: were REDIS_URL read, the run would fail.
	code, _, errs := runMain(Env{"REDIS_URL": "redis://127.0.0.1:1/3", "HOPPER_WORKER_ID": "w"},
		"run", "-j", "1", "--progress", "off", "--timings", "off", "u1", "--", "true")
	assert.Equal(t, 0, code, errs)
	first, _, _ := strings.Cut(errs, "\n")
	assert.Regexp(t, `^hopper run: build run-\S+, 1 unit\(s\), 1 worker\(s\), on the embedded server \(redis://[^)]+\); REDIS_URL is not read by hopper run`, first)
}

// TestCommandsNameTheirRedis: the other commands read REDIS_URL, and name
// the Redis and the variable in their first line and in their errors.
func TestCommandsNameTheirRedis(t *testing.T) {
	srv, err := embedded.Start()
	require.NoError(t, err)
	defer srv.Close()
	env := Env{"REDIS_URL": srv.URL()}
	code, _, errs := runMain(env, "report", "--build", "nothing-here", "--init-timeout", "0.01")
	assert.Equal(t, 2, code, errs)
	first, _, _ := strings.Cut(errs, "\n")
	assert.Equal(t, "hopper report: build nothing-here on Redis "+srv.URL()+" (from REDIS_URL)", first)

	for _, cmd := range [][]string{
		{"report", "--build", "b"}, {"status", "--build", "b", "--once"}, {"events", "--build", "b"},
		{"work", "--build", "b", "u", "--", "true"},
	} {
		code, _, errs := runMain(Env{"REDIS_URL": "redis://127.0.0.1:1"}, cmd...)
		assert.Equal(t, 2, code, cmd)
		assert.Contains(t, errs, "hopper "+cmd[0]+": cannot reach Redis at redis://127.0.0.1:1 (from REDIS_URL): ", cmd)
	}
}
