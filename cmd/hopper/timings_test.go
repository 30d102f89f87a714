package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timedSuite: three units of clearly different lengths, given shortest
// first.
var timedSuite = map[string]string{
	"quick.sh":  `sleep 0.05`,
	"slow.sh":   `sleep 0.8`,
	"medium.sh": `sleep 0.4`,
}

// ranOrder is the order of the "==> unit: passed" headers: with -j 1, the
// order the units ran in.
func ranOrder(stdout string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^==> (\S+): passed`).FindAllStringSubmatch(stdout, -1) {
		out = append(out, m[1])
	}
	return out
}

// hopper run records each unit's duration in the --timings file, and the
// next build of the suite runs the longest first; a file whose content is
// not a table is a warning and the given order, and is replaced.
func TestRunTimingsFile(t *testing.T) {
	dir := fixture(t, timedSuite)
	file := filepath.Join(dir, "timings", "suite.json")
	run := func() (string, string) {
		t.Helper()
		code, out, errs := hopper(t, dir, baseEnv(), "run", "-j", "1", "--progress", "off", "--timings", file,
			"quick.sh", "slow.sh", "medium.sh", "--", "sh", "{unit}")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
		return out, errs
	}
	given := []string{"quick.sh", "slow.sh", "medium.sh"}
	out, _ := run()
	assert.Equal(t, given, ranOrder(out), "cold: the given order")
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Regexp(t, `^\{"version":1,"units":\{"medium.sh":[0-9.]+,"quick.sh":[0-9.]+,"slow.sh":[0-9.]+\}\}$`, string(raw))

	out, errs := run()
	assert.Equal(t, []string{"slow.sh", "medium.sh", "quick.sh"}, ranOrder(out), "warm: longest first\n%s", errs)
	assert.Contains(t, errs, "3 of 3 unit(s) timed by earlier builds ("+file+")")

	require.NoError(t, os.WriteFile(file, []byte("{corrupt"), 0o644))
	out, errs = run()
	assert.Equal(t, given, ranOrder(out), "corrupt: the given order")
	assert.Contains(t, errs, "warning: the suite's timings in "+file+" cannot be read")
	assert.Contains(t, errs, "warning: "+file+" held unreadable timings; replaced by this build's")
	out, _ = run()
	assert.Equal(t, []string{"slow.sh", "medium.sh", "quick.sh"}, ranOrder(out), "after the corrupt file was replaced")
}

// Without --timings, hopper run on the embedded server keeps the suite's
// timings in the user's cache dir; --timings off keeps none.
func TestRunTimingsDefaultAndOff(t *testing.T) {
	dir := fixture(t, timedSuite)
	cache := t.TempDir()
	env := append(baseEnv(), "XDG_CACHE_HOME="+cache)
	code, out, errs := hopper(t, dir, env, "run", "-j", "1", "--progress", "off", "--timings", "off", "quick.sh", "--", "sh", "{unit}")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	files, _ := filepath.Glob(filepath.Join(cache, "hopper", "timings", "*.json"))
	assert.Empty(t, files, "--timings off wrote timings")

	code, out, errs = hopper(t, dir, env, "run", "-j", "1", "--progress", "off", "quick.sh", "--", "sh", "{unit}")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	files, _ = filepath.Glob(filepath.Join(cache, "hopper", "timings", "*.json"))
	require.Len(t, files, 1, "the embedded server's timings in the cache dir")
	assert.Regexp(t, `/hopper/timings/[0-9a-f]{32}\.json$`, files[0])

	code, _, errs = hopper(t, dir, env, "run", "--timings", "", "quick.sh", "--", "sh", "{unit}")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "--timings must name a file, or off")
}

// On a shared Redis (as the least-privilege user), the suite's timings
// live in its key: the second build finds them there and runs the longest
// first.
func TestRunTimingsOnRedis(t *testing.T) {
	dir := fixture(t, timedSuite)
	run := func() (string, string) {
		t.Helper()
		code, out, errs := hopper(t, dir, baseEnv(), "run", "-j", "1", "--progress", "off", "--redis", redisURL(t),
			"--unit-type", "timed-"+t.Name(), "quick.sh", "slow.sh", "medium.sh", "--", "sh", "{unit}")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)
		assert.NotContains(t, errs, "warning")
		return out, errs
	}
	out, _ := run()
	assert.Equal(t, []string{"quick.sh", "slow.sh", "medium.sh"}, ranOrder(out), "cold: the given order")
	out, errs := run()
	assert.Equal(t, []string{"slow.sh", "medium.sh", "quick.sh"}, ranOrder(out), "warm: longest first")
	assert.Regexp(t, `3 of 3 unit\(s\) timed by earlier builds \(Redis key hopper:timings:\{[0-9a-f]{32}\}\)`, errs)
}
