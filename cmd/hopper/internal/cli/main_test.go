package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runMain(env Env, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, env, Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		code, out, errs := runMain(Env{}, args...)
		assert.Equal(t, 0, code)
		assert.Contains(t, out, "hopper run [-j N]")
		assert.Empty(t, errs)
	}
	for name, c := range commands {
		code, out, _ := runMain(Env{}, name, "--help")
		assert.Equal(t, 0, code, name)
		assert.Equal(t, c.usage, out, name)
		code, out, _ = runMain(Env{}, "help", name)
		assert.Equal(t, 0, code, name)
		assert.Equal(t, c.usage, out, name)
		if name != "version" {
			assert.True(t, strings.HasSuffix(out, redisForms), "the help of %s ends with the forms of --redis", name)
		}
	}
	code, _, errs := runMain(Env{})
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "Usage:")
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `hopper: unknown command "frobnicate"` + "\nRun 'hopper --help' for usage.\n"},
		// The help of a misspelled command is the same refusal, not the
		// general help with exit 0.
		{[]string{"help", "wrok"}, `hopper: unknown command "wrok"` + "\nRun 'hopper --help' for usage.\n"},
		{[]string{"--help", "raport"}, `hopper: unknown command "raport"`},
		{[]string{"work", "--build", "b", "u1"}, "hopper work: no Redis: pass --redis redis://HOST:PORT, or set HOPPER_REDIS_URL or REDIS_URL\nRun 'hopper work --help' for usage.\n"},
		{[]string{"work", "--build", "b", "--redis", "127.0.0.1:1", "u1"}, "hopper work: no command: put it after --, e.g. -- bundle exec rspec {unit}\nRun 'hopper work --help' for usage.\n"},
		{[]string{"work", "--build", "b", "--redis", "127.0.0.1:1", "u1", "--"}, "hopper work: no command after --\n"},
		{[]string{"work", "--build", "b", "--redis", "127.0.0.1:1", "--", "true"}, "hopper work: no units: name them as arguments before --, or give --units-from FILE\n"},
		{[]string{"work", "--build", "b", "--redis", "127.0.0.1:1", "u", "--", "/no/such/program"}, `hopper work: cannot run "/no/such/program": no such file or directory`},
		{[]string{"work", "--build", "b", "--redis", "127.0.0.1:1", "u", "--", "no-such-program-hopper"}, `hopper work: cannot run "no-such-program-hopper": executable file not found in $PATH`},
		{[]string{"work", "--build", "b", "--redis", "127.0.0.1:1", "--junit-out", "x.xml", "u", "--", "true"}, "hopper work: --junit-out is for the report: give --report-on-exit too, or use hopper report\n"},
		{[]string{"report", "--build", "b", "--redis", "127.0.0.1:1", "extra"}, "hopper report: unexpected argument \"extra\"\nRun 'hopper report --help' for usage.\n"},
		{[]string{"report", "--build", "b", "--redis", "127.0.0.1:1", "--inactive-timeout", "0"}, `hopper report: --inactive-timeout must be a positive number of seconds, got "0"`},
		{[]string{"report", "--redis", "127.0.0.1:1"}, "hopper report: no build id: pass --build"},
		{[]string{"work", "--build", "b", "--redis", "redis://127.0.0.1:7000,127.0.0.1:x", "u", "--", "true"}, `hopper work: --redis "redis://127.0.0.1:7000,127.0.0.1:x": address "127.0.0.1:x" has port "x", not a number from 1 to 65535` + "\nRun 'hopper work --help' for usage.\n"},
		{[]string{"report", "--build", "b", "--redis", "127.0.0.1:7000,,127.0.0.1:7002"}, `hopper report: --redis "127.0.0.1:7000,,127.0.0.1:7002": address 2 of 3 is empty` + "\nRun 'hopper report --help' for usage.\n"},
		{[]string{"status", "--build", "b", "--interval", "0"}, `hopper status: --interval must be a positive number of seconds, got "0"`},
		{[]string{"events", "--build", "b", "--", "x"}, "hopper events: unexpected command after --"},
		{[]string{"run", "-j", "0", "u", "--", "true"}, `hopper run: --jobs must be a whole number, at least 1, got "0"`},
		// Ids are checked before Redis is dialled (127.0.0.1:1 refuses).
		{[]string{"work", "--build", "a{b}", "--redis", "127.0.0.1:1", "u", "--", "true"}, `hopper work: build id "a{b}" holds a brace, which would move its keys to another cluster slot`},
		{[]string{"report", "--build", "x}", "--redis", "127.0.0.1:1"}, `hopper report: build id "x}" holds a brace`},
		{[]string{"work", "--build", "bad\xff", "--redis", "127.0.0.1:1", "u", "--", "true"}, `hopper work: build id "bad\xff" is not valid UTF-8`},
		{[]string{"work", "--build", "b", "--worker", "w\xfe", "--redis", "127.0.0.1:1", "u", "--", "true"}, `hopper work: worker id "w\xfe" is not valid UTF-8`},
		{[]string{"work", "--build", "b", "--worker", strings.Repeat("w", 1025), "--redis", "127.0.0.1:1", "u", "--", "true"}, `hopper work: worker id is 1025 bytes, over 1024`},
		{[]string{"work", "--build", "b", "--redis", "127.0.0.1:1", "u\xff", "--", "true"}, `is not valid UTF-8`},
		// A budget the build's meta cannot hold is refused before Redis is
		// dialled, naming the flag, not by the worker after connecting.
		{[]string{"work", "--build", "b", "--redis", "127.0.0.1:1", "--max-requeues", "3000000000", "u", "--", "true"}, `hopper work: --max-requeues must be at most 2147483647, got "3000000000"` + "\nRun 'hopper work --help' for usage.\n"},
		{[]string{"run", "--redis", "127.0.0.1:1", "--max-reclaims", "2147483648", "u", "--", "true"}, `hopper run: --max-reclaims must be at most 2147483647, got "2147483648"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := runMain(Env{}, tc.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.Contains(t, errs, tc.want)
		})
	}
}

func TestUnreachableRedis(t *testing.T) {
	for _, cmd := range [][]string{
		{"work", "--build", "b", "--redis", "redis://127.0.0.1:1", "u", "--", "true"},
		{"report", "--build", "b", "--redis", "redis://127.0.0.1:1"},
		{"status", "--build", "b", "--redis", "redis://127.0.0.1:1"},
		{"events", "--build", "b", "--redis", "redis://127.0.0.1:1"},
		{"run", "--redis", "redis://127.0.0.1:1", "u", "--", "true"},
	} {
		code, out, errs := runMain(Env{}, cmd...)
		assert.Equal(t, 2, code, "%v", cmd)
		assert.Empty(t, out)
		assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
		assert.Contains(t, errs, "hopper "+cmd[0]+": cannot reach Redis at redis://127.0.0.1:1 (from --redis): ")
		assert.Contains(t, errs, "connection refused")
	}
}

// TestRunHelpNamesFallbacks: hopper run takes its worker id and its Redis
// from the environment as hopper work does, and its help says so, since a
// CI job's HOPPER_WORKER_ID, CI_NODE_INDEX or REDIS_URL changes what it does.
func TestRunHelpNamesFallbacks(t *testing.T) {
	f := newFlagSet("run")
	wf := addWorkFlags(f, "jobs", "j")
	_, _, err := f.Parse([]string{"a", "--", "x"})
	require.NoError(t, err)
	o, err := wf.resolve(f, Env{"HOPPER_WORKER_ID": "hw", "REDIS_URL": "127.0.0.1:1"}, "jobs", false)
	require.NoError(t, err)
	assert.Equal(t, "hw", o.WorkerID)
	assert.NotEmpty(t, o.Redis)

	workerLine := ""
	for l := range strings.SplitSeq(runUsage, "\n  --") {
		if strings.HasPrefix(l, "worker ") {
			workerLine = l
		}
	}
	assert.Contains(t, workerLine, "HOPPER_WORKER_ID", "hopper run --help, --worker")
	assert.Contains(t, workerLine, "node index", "hopper run --help, --worker")
	_, run, _ := strings.Cut(topUsage, "hopper run [-j N]")
	run, _, _ = strings.Cut(run, "hopper work")
	assert.Contains(t, run, "REDIS_URL", "hopper --help, on hopper run's embedded server")
}
