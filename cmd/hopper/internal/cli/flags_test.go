package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseWork(t *testing.T, env Env, args ...string) (workOptions, []string, []string, error) {
	t.Helper()
	f := newFlagSet("work")
	wf := addWorkFlags(f, "processes")
	pos, cmd, err := f.Parse(args)
	if err != nil {
		return workOptions{}, pos, cmd, err
	}
	o, err := wf.resolve(f, env, "processes", true)
	return o, pos, cmd, err
}

func TestWorkDefaults(t *testing.T) {
	o, pos, cmd, err := parseWork(t, Env{}, "--build", "b1", "--redis", "redis://127.0.0.1:6379", "a", "b", "--", "rspec", "{unit}")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, pos)
	assert.Equal(t, []string{"rspec", "{unit}"}, cmd)
	assert.Equal(t, "b1", o.BuildID)
	assert.Equal(t, 180*time.Second, o.Timeout)
	assert.Equal(t, 900*time.Second, o.MaxUnitDuration)
	assert.Equal(t, 0, o.MaxRequeues)
	assert.Equal(t, 0.0, o.RequeueTolerance)
	assert.Equal(t, 3, o.MaxReclaims)
	assert.Equal(t, 1, o.Processes)
	assert.Equal(t, 14400*time.Second, o.TTL)
	assert.Equal(t, 604800*time.Second, o.TombstoneTTL)
	assert.Equal(t, 300*time.Second, o.InitTimeout)
	assert.False(t, o.ReportOnExit)
	assert.Equal(t, "file", o.UnitType)
	assert.Equal(t, "auto", o.Progress)
	host, _ := os.Hostname()
	assert.True(t, strings.HasPrefix(o.WorkerID, host+"-"), o.WorkerID)

	cfg := o.config("w")
	assert.Equal(t, 3, cfg.MaxReclaims)
}

func TestWorkFlagsInterspersed(t *testing.T) {
	o, pos, cmd, err := parseWork(t, Env{"HOPPER_REDIS_URL": "127.0.0.1:1"},
		"u1", "--build=b2", "u2", "--timeout", "0.5", "--max-reclaims", "0", "--processes=4", "--report-on-exit", "u3", "--", "go", "test", "--", "{unit}")
	require.NoError(t, err)
	assert.Equal(t, []string{"u1", "u2", "u3"}, pos)
	assert.Equal(t, []string{"go", "test", "--", "{unit}"}, cmd, "only the first -- ends the flags")
	assert.Equal(t, 500*time.Millisecond, o.Timeout)
	assert.Equal(t, 4, o.Processes)
	assert.True(t, o.ReportOnExit)
	assert.Equal(t, -1, o.config("w").MaxReclaims, "--max-reclaims 0 means no reclaim")
	assert.Equal(t, "127.0.0.1:1", o.Redis)
	assert.Equal(t, "HOPPER_REDIS_URL", o.redisFrom)
}

func TestDurationsAsGoDurations(t *testing.T) {
	o, _, _, err := parseWork(t, Env{}, "--build", "b", "--timeout", "3m", "--max-unit-duration", "1500ms", "--", "x")
	require.NoError(t, err)
	assert.Equal(t, 3*time.Minute, o.Timeout)
	assert.Equal(t, 1500*time.Millisecond, o.MaxUnitDuration)
}

func TestEnvironmentFallbacks(t *testing.T) {
	for _, tc := range []struct {
		name          string
		env           Env
		args          []string
		build, worker string
		redis, from   string
	}{
		{"flags win", Env{"HOPPER_BUILD_ID": "env-b", "HOPPER_WORKER_ID": "env-w", "HOPPER_REDIS_URL": "redis://env:1", "REDIS_URL": "redis://r:2", "GITLAB_CI": "true", "CI_PIPELINE_ID": "9"},
			[]string{"--build", "flag-b", "--worker", "flag-w", "--redis", "redis://flag:3"}, "flag-b", "flag-w", "redis://flag:3", "--redis"},
		{"HOPPER_ variables before the CI", Env{"HOPPER_BUILD_ID": "env-b", "HOPPER_WORKER_ID": "env-w", "HOPPER_REDIS_URL": "redis://env:1", "REDIS_URL": "redis://r:2", "GITLAB_CI": "true", "CI_PIPELINE_ID": "9", "CI_NODE_INDEX": "4"},
			nil, "env-b", "env-w", "redis://env:1", "HOPPER_REDIS_URL"},
		{"REDIS_URL and the CI", Env{"REDIS_URL": "redis://r:2", "GITLAB_CI": "true", "CI_PIPELINE_ID": "9", "CI_NODE_INDEX": "4"},
			nil, "9", "4", "redis://r:2", "REDIS_URL"},
		{"empty variables are unset", Env{"HOPPER_BUILD_ID": " ", "HOPPER_WORKER_ID": "", "BUILDKITE": "true", "BUILDKITE_BUILD_ID": "bk", "BUILDKITE_PARALLEL_JOB": "1"},
			nil, "bk", "1", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _, _, err := parseWork(t, tc.env, append(tc.args, "--", "x")...)
			require.NoError(t, err)
			assert.Equal(t, tc.build, o.BuildID)
			assert.Equal(t, tc.worker, o.WorkerID)
			assert.Equal(t, tc.redis, o.Redis)
			assert.Equal(t, tc.from, o.redisFrom)
		})
	}
}

// Every value check of docs/cli.md#refused-input has its own message, naming the flag
// and the value.
func TestWorkValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  Env
		want string
	}{
		{[]string{"--timeout", "0"}, nil, `--timeout must be a positive number of seconds, got "0"`},
		{[]string{"--timeout", "-5"}, nil, `--timeout must be a positive number of seconds, got "-5"`},
		{[]string{"--timeout", "soon"}, nil, `--timeout must be a positive number of seconds, got "soon"`},
		{[]string{"--max-unit-duration", "0"}, nil, `--max-unit-duration must be a positive number of seconds, got "0"`},
		{[]string{"--ttl", "x"}, nil, `--ttl must be a positive number of seconds, got "x"`},
		{[]string{"--ttl", "12", "--timeout", "9"}, nil, `--ttl "12" must be longer than --timeout "9" plus a heartbeat interval (3s)`},
		{[]string{"--timeout", "86400"}, nil, `--ttl "14400" must be longer than --timeout "86400" plus a heartbeat interval (30s)`},
		{[]string{"--tombstone-ttl", "0"}, nil, `--tombstone-ttl must be a positive number of seconds, got "0"`},
		{[]string{"--init-timeout", "NaN"}, nil, `--init-timeout must be a positive number of seconds, got "NaN"`},
		{[]string{"--max-requeues", "-1"}, nil, `--max-requeues must be a whole number, not negative, got "-1"`},
		{[]string{"--max-requeues", "1.5"}, nil, `--max-requeues must be a whole number, not negative, got "1.5"`},
		{[]string{"--max-reclaims", "-2"}, nil, `--max-reclaims must be a whole number, not negative, got "-2"`},
		{[]string{"--processes", "0"}, nil, `--processes must be a whole number, at least 1, got "0"`},
		{[]string{"--processes", "two"}, nil, `--processes must be a whole number, at least 1, got "two"`},
		{[]string{"--requeue-tolerance", "1.5"}, nil, `--requeue-tolerance must be a number between 0 and 1, got "1.5"`},
		{[]string{"--requeue-tolerance", "-0.1"}, nil, `--requeue-tolerance must be a number between 0 and 1, got "-0.1"`},
		{[]string{"--min-examples", "-1"}, nil, `--min-examples must be a whole number, not negative, got "-1"`},
		{[]string{"--progress", "loud"}, nil, `--progress must be auto, live, plain or off, got "loud"`},
		{[]string{"--timeout"}, nil, `--timeout needs a value`},
		{[]string{"--bogus"}, nil, `unknown flag --bogus`},
		{[]string{"--report-on-exit=maybe"}, nil, `--report-on-exit takes no value, or true or false; got "maybe"`},
		{[]string{"--build", ""}, nil, `--build must not be empty`},
		{[]string{"--worker", " "}, nil, `--worker must not be empty`},
		{[]string{"--redis", "http://[::1"}, nil, `--redis "http://[::1" is not a Redis URL`},
		{[]string{}, Env{"REDIS_URL": "ftp://x"}, `REDIS_URL "ftp://x" is not a Redis URL`},
		{[]string{"--units-from="}, nil, `--units-from must name a file, or - for stdin`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := tc.args
			if !strings.HasPrefix(strings.Join(args, " "), "--build") {
				args = append([]string{"--build", "b"}, args...)
			}
			_, _, _, err := parseWork(t, tc.env, append(args, "--", "x")...)
			require.Error(t, err)
			var ue usageError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNoBuildID(t *testing.T) {
	_, _, _, err := parseWork(t, Env{}, "--", "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no build id: pass --build, set HOPPER_BUILD_ID, or run under CircleCI, Buildkite, GitHub Actions or GitLab CI")
	_, _, _, err = parseWork(t, Env{"GITHUB_ACTIONS": "true"}, "--", "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no build id: GitHub Actions is detected but its build id variable is not set")
}

func TestSlotIDs(t *testing.T) {
	assert.Equal(t, []string{"w"}, slotIDs("w", 1))
	assert.Equal(t, []string{"w.1", "w.2", "w.3"}, slotIDs("w", 3))
}

func TestReadUnits(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "units.txt")
	require.NoError(t, os.WriteFile(file, []byte("spec/b_spec.rb\n\n  spec/c_spec.rb  \r\nspec/d spec.rb\n"), 0o644))

	units, err := readUnits([]string{"spec/a_spec.rb"}, file, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"spec/a_spec.rb", "spec/b_spec.rb", "spec/c_spec.rb", "spec/d spec.rb"}, units)

	units, err = readUnits(nil, "-", strings.NewReader("x\ny\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"x", "y"}, units)

	units, err = readUnits(nil, "-", strings.NewReader(""))
	require.NoError(t, err)
	assert.Empty(t, units, "an empty list is a build of no units, which the report judges")

	_, err = readUnits(nil, filepath.Join(dir, "missing.txt"), nil)
	require.Error(t, err)
	assert.Equal(t, "cannot read --units-from "+filepath.Join(dir, "missing.txt")+": no such file or directory", err.Error())
	_, err = readUnits(nil, dir, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot read --units-from "+dir+": ")

	_, err = readUnits([]string{"spec/b_spec.rb"}, file, nil)
	require.Error(t, err)
	assert.Equal(t, `unit "spec/b_spec.rb" is given twice (argument 1 and line 1 of `+file+`)`, err.Error())

	_, err = readUnits([]string{"a", ""}, "", nil)
	require.Error(t, err)
	assert.Equal(t, "argument 2 is an empty unit id", err.Error())
}

// A unit id that no command could be given is refused up front, naming the
// unit once and where it came from: a NUL byte (a list written by find
// -print0) cannot be in an argument or in HOPPER_UNIT, and every attempt
// would fail to start.
func TestReadUnitsRefusesBadIDs(t *testing.T) {
	long := strings.Repeat("u", queue.MaxIDBytes+1)
	tests := []struct {
		args  []string
		stdin string
		want  string
	}{
		{nil, "spec/a_spec.rb\x00spec/b_spec.rb\x00\n", `unit "spec/a_spec.rb\x00spec/b_spec.rb\x00" (line 1 of stdin) holds a NUL byte, which no command line can carry`},
		{[]string{"ok", "a\x00b"}, "", `unit "a\x00b" (argument 2) holds a NUL byte, which no command line can carry`},
		{[]string{"a\rb"}, "", `unit "a\rb" (argument 1) has a line break`},
		{nil, "ok\nb\xff\n", `unit "b\xff" (line 2 of stdin) is not valid UTF-8`},
		{[]string{long}, "", fmt.Sprintf("unit (argument 1) is %d bytes, over %d", len(long), queue.MaxIDBytes)},
		// A line past the scanner's buffer is the same mistake, not "token too long".
		{nil, "ok\n\n" + strings.Repeat("u", 2<<20) + "\n", fmt.Sprintf("unit (line 3 of stdin) is over %d bytes", queue.MaxIDBytes)},
	}
	for _, tt := range tests {
		from := ""
		if tt.stdin != "" {
			from = "-"
		}
		_, err := readUnits(tt.args, from, strings.NewReader(tt.stdin))
		if err == nil {
			t.Errorf("readUnits(%q, %q) = nil error, want %q", tt.args, tt.stdin, tt.want)
			continue
		}
		if got := err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestUnknownFlagNamedAsTyped: a bad flag is named as it was typed, since
// the flag package drops the dashes, and -j4 (make's way) says where the
// value goes instead of reporting an unknown --j4.
func TestUnknownFlagNamedAsTyped(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-j4"}, `unknown flag -j4: put the value after a space, -j 4`},
		{[]string{"a", "-j12", "b"}, `unknown flag -j12: put the value after a space, -j 12`},
		{[]string{"--j4"}, `unknown flag --j4`},
		{[]string{"-x"}, `unknown flag -x`},
		{[]string{"-colour"}, `unknown flag -colour`},
		{[]string{"--colour=red"}, `unknown flag --colour`},
		{[]string{"--build", "-j4", "--bogus"}, `unknown flag --bogus`},
		{[]string{"-j"}, `-j needs a value`},
		{[]string{"--timeout"}, `--timeout needs a value`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f := newFlagSet("run")
			addWorkFlags(f, "jobs", "j")
			_, _, err := f.Parse(append(tc.args, "--", "x"))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}
