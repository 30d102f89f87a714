package attempt

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sh(script string, extra ...string) *Command {
	return &Command{Args: append([]string{"sh", "-c", script, "sh"}, extra...), BuildID: "b1", WorkerID: "w1", Slot: 1}
}

func reservation(unit string) queue.Reservation {
	return queue.Reservation{WorkerID: "w1", Stream: queue.StreamUnits, EntryID: "1-0", UnitID: unit, UnitType: "file", DeliveryCount: 1}
}

func TestPassed(t *testing.T) {
	c := sh(`echo out; echo err >&2; exit 0`)
	res := c.Func()(context.Background(), reservation("u1"))
	assert.Equal(t, worker.Passed, res.Outcome)
	assert.Empty(t, res.Errors)
	assert.Equal(t, "out\nerr\n", string(res.Output))
	assert.Greater(t, res.Duration, time.Duration(0))
}

func TestPlaceholderAndEnvironment(t *testing.T) {
	for _, tc := range []struct {
		slot int
		want string
	}{{1, "[]"}, {0, "[]"}, {3, "[3]"}} {
		c := sh(`echo "arg=$1 unit=$HOPPER_UNIT build=$HOPPER_BUILD_ID worker=$HOPPER_WORKER_ID env=[$TEST_ENV_NUMBER] keep=$KEEP"`, "x{unit}y{unit}")
		c.Slot = tc.slot
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "KEEP=1", "HOPPER_UNIT=stale", "TEST_ENV_NUMBER=9"}
		out, o := c.Run(context.Background(), "spec/a b.rb")
		require.True(t, o.Passed(), "%+v %s", o, out)
		assert.Equal(t, "arg=xspec/a b.rbyspec/a b.rb unit=spec/a b.rb build=b1 worker=w1 env="+tc.want+" keep=1\n", string(out), "slot %d", tc.slot)
	}
}

func TestTestEnvNumber(t *testing.T) {
	assert.Equal(t, "", TestEnvNumber(1))
	assert.Equal(t, "2", TestEnvNumber(2))
	assert.Equal(t, "12", TestEnvNumber(12))
}

func TestOwnProcessGroup(t *testing.T) {
	c := sh(`echo $$ $(cut -d' ' -f5 /proc/$$/stat)`)
	out, o := c.Run(context.Background(), "u")
	require.True(t, o.Passed(), "%s", out)
	f := strings.Fields(string(out))
	require.Len(t, f, 2, "%q", out)
	assert.Equal(t, f[0], f[1], "the command's process group is its own pid")
	assert.NotEqual(t, strconv.Itoa(syscall.Getpgrp()), f[1])
}

func TestFailedExitIsRequeueCandidate(t *testing.T) {
	c := sh(`echo first line; echo "boom: expected 1, got 2"; exit 3`, "{unit}")
	res := c.Func()(context.Background(), reservation("spec/x_spec.rb"))
	assert.Equal(t, worker.Failed, res.Outcome)
	assert.False(t, res.NoRequeue, "an exit status leaves the decision to the retry budget")
	require.Len(t, res.Errors, 1)
	e := res.Errors[0]
	assert.Equal(t, "spec/x_spec.rb", e.ExampleID)
	assert.Equal(t, `sh -c 'echo first line; echo "boom: expected 1, got 2"; exit 3' sh spec/x_spec.rb`, e.Description)
	assert.Equal(t, "exit status 3", e.Class)
	assert.Equal(t, "first line\nboom: expected 1, got 2", e.Message)
	assert.Equal(t, []string{}, e.Backtrace)
}

func TestSignalIsFinal(t *testing.T) {
	c := sh(`echo dying; kill -KILL $$`)
	res := c.Func()(context.Background(), reservation("u"))
	assert.Equal(t, worker.Failed, res.Outcome)
	assert.True(t, res.NoRequeue, "a signal says nothing about the unit")
	require.Len(t, res.Errors, 1)
	assert.Equal(t, "killed by signal SIGKILL", res.Errors[0].Class)
	assert.Equal(t, "dying", res.Errors[0].Message)
}

func TestCannotStart(t *testing.T) {
	c := &Command{Args: []string{"/nonexistent/hopper-test-command", "{unit}"}}
	res := c.Func()(context.Background(), reservation("u"))
	assert.Equal(t, worker.Failed, res.Outcome)
	require.Len(t, res.Errors, 1)
	assert.Equal(t, "cannot start", res.Errors[0].Class)
	assert.Contains(t, res.Errors[0].Message, "no such file or directory")
	assert.Contains(t, string(res.Output), "hopper: cannot start /nonexistent/hopper-test-command u")
}

// Why a command cannot start is said once, after the command line, without
// exec's own repetition of the program ("cannot start /x u: fork/exec /x:
// ...").
func TestCannotStartSaysWhyOnce(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"/nonexistent/hopper-test-command", "{unit}"}, "hopper: cannot start /nonexistent/hopper-test-command u: no such file or directory\n"},
		{[]string{"hopper-test-command-not-in-path", "{unit}"}, "hopper: cannot start hopper-test-command-not-in-path u: executable file not found in $PATH\n"},
		{[]string{t.TempDir()}, "permission denied\n"},
	} {
		out, o := (&Command{Args: tt.args}).Run(context.Background(), "u")
		require.Error(t, o.StartErr)
		if got := string(out); !strings.HasSuffix(got, tt.want) || strings.Count(got, tt.args[0]) != 1 {
			t.Errorf("got %q, want it to end %q and name %s once", got, tt.want, tt.args[0])
		}
	}
}

func alive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// state is the field after the command name, which is in parentheses.
	s := string(raw)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	return rest[0] != 'Z' && rest[0] != 'X'
}

func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never written", path)
	return ""
}

// An abort (the attempt's context ending while the worker is not being
// stopped) kills the whole process group at once.
func TestAbortKillsTheProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := sh(`trap "" TERM; sleep 100 & echo $! > "$1"; echo started; wait`, pidFile)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var out []byte
	var o Outcome
	go func() {
		defer close(done)
		out, o = c.Run(ctx, "u")
	}()
	child, err := strconv.Atoi(waitFile(t, pidFile))
	require.NoError(t, err)
	require.True(t, alive(child))
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.True(t, o.Cancelled)
	assert.Equal(t, "interrupted", o.Status())
	assert.Equal(t, "started\n", string(out))
	require.Eventually(t, func() bool { return !alive(child) }, 5*time.Second, 10*time.Millisecond, "the background child survived")

	res := c.result(reservation("u"), out, o)
	assert.Equal(t, worker.Failed, res.Outcome)
	assert.True(t, res.NoRequeue)
}

// A worker being stopped forwards the signal to the group and gives it its
// grace period; a second interrupt (Kill) cuts it short.
func TestStopSignalsThenGrace(t *testing.T) {
	dir := t.TempDir()
	run := func(c *Command) (chan struct{}, context.CancelFunc, *[]byte, *Outcome) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var out []byte
		var o Outcome
		go func() {
			defer close(done)
			out, o = c.Run(ctx, "u")
		}()
		return done, cancel, &out, &o
	}
	wait := func(done chan struct{}, d time.Duration, msg string) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(d):
			t.Fatal(msg)
		}
	}

	sup := NewSupervisor()
	c := sh(`trap 'echo got term; exit 7' TERM; echo ready > "$1"; while :; do sleep 0.05; done`, filepath.Join(dir, "ready"))
	c.Supervisor, c.Grace = sup, 5*time.Second
	done, cancel, out, o := run(c)
	waitFile(t, filepath.Join(dir, "ready"))
	assert.Equal(t, 1, sup.Running())
	sup.Stop(syscall.SIGTERM)
	cancel()
	wait(done, 4*time.Second, "the command did not get SIGTERM")
	assert.Contains(t, string(*out), "got term")
	assert.True(t, o.Cancelled)
	assert.True(t, sup.Wait(time.Second))
	assert.Equal(t, 0, sup.Running())

	// One that ignores it is killed after the grace period...
	c = sh(`trap '' TERM; echo ready > "$1"; while :; do sleep 0.05; done`, filepath.Join(dir, "ready2"))
	c.Supervisor, c.Grace = sup, 300*time.Millisecond
	done, cancel, _, o = run(c)
	waitFile(t, filepath.Join(dir, "ready2"))
	start := time.Now()
	cancel()
	wait(done, 4*time.Second, "the command was not killed after its grace period")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.True(t, o.Cancelled)

	// ... or at once on Kill.
	c = sh(`trap '' TERM; echo ready > "$1"; while :; do sleep 0.05; done`, filepath.Join(dir, "ready3"))
	c.Supervisor, c.Grace = sup, time.Hour
	done, cancel, _, _ = run(c)
	waitFile(t, filepath.Join(dir, "ready3"))
	cancel()
	time.Sleep(50 * time.Millisecond)
	sup.Kill()
	wait(done, 4*time.Second, "Kill did not cut the grace period short")
}

// What a unit leaves running in its group is killed when it exits, and does
// not hold the attempt open through the output pipe.
func TestLeftoversAreKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := sh(`sleep 100 & echo $! > "$1"; echo done`, pidFile)
	start := time.Now()
	out, o := c.Run(context.Background(), "u")
	assert.Less(t, time.Since(start), time.Second)
	assert.True(t, o.Passed())
	assert.Equal(t, "done\n", string(out))
	child, err := strconv.Atoi(waitFile(t, pidFile))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !alive(child) }, 5*time.Second, 10*time.Millisecond)
}

func TestHeader(t *testing.T) {
	c := sh(`echo hi; exit 1`)
	c.Header = func(r queue.Reservation, o Outcome) string { return "== " + r.UnitID + " " + o.Status() + "\n" }
	res := c.Func()(context.Background(), reservation("u9"))
	assert.Equal(t, "== u9 exit status 1\nhi\n", string(res.Output))
}

func TestOutputKeepsTheTail(t *testing.T) {
	c := sh(`i=0; while [ $i -lt 200 ]; do echo "line $i"; i=$((i+1)); done; exit 1`)
	c.MaxOutput = 100
	res := c.Func()(context.Background(), reservation("u"))
	out := string(res.Output)
	assert.True(t, strings.HasPrefix(out, "hopper: the first "), out)
	assert.True(t, strings.HasSuffix(out, "line 199\n"), out)
	assert.Contains(t, out, "bytes of output were dropped (only the last 100 are kept)")
}

func TestTailWriter(t *testing.T) {
	w := newTail(10)
	for i := range 1000 {
		_, _ = w.Write([]byte{byte('a' + i%26)})
	}
	got := string(w.Bytes())
	assert.True(t, strings.HasSuffix(got, "defghijkl"), got) // the last 10 of a..z repeated, ending at index 999
	assert.Contains(t, got, "the first 990 bytes")
	assert.LessOrEqual(t, cap(w.buf), 64, "the buffer stays bounded")
}

func TestTail(t *testing.T) {
	assert.Equal(t, "abc", Tail([]byte("abc\n\n"), 100))
	long := strings.Repeat("x", 50) + "\n" + strings.Repeat("y", 40) + "\nlast line"
	got := Tail([]byte(long), 60)
	assert.LessOrEqual(t, len(got), 60)
	assert.Equal(t, "...\n"+strings.Repeat("y", 40)+"\nlast line", got, "cut at the line that starts near the cut")
	// No line start near the cut: cut mid-line, on a rune boundary.
	runes := strings.Repeat("é", 100)
	got = Tail([]byte(runes), 51)
	assert.True(t, utf8.ValidString(got))
	assert.LessOrEqual(t, len(got), 51)
	assert.True(t, strings.HasPrefix(got, "...\n"))
	// Invalid UTF-8 is replaced.
	assert.True(t, utf8.ValidString(Tail([]byte{0xff, 'a'}, 10)))
	// What the log gets is within the cap.
	big := []byte(strings.Repeat("0123456789\n", 2000))
	e := ErrorEntry("u", []string{"x"}, Outcome{ExitCode: 1}, big)
	assert.LessOrEqual(t, len(e.Message), events.MaxMessageBytes)
	assert.True(t, strings.HasSuffix(e.Message, "0123456789"))
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"go", "test", "./pkg/..."}, "go test ./pkg/..."},
		{[]string{"sh", "-c", "echo $HOPPER_UNIT"}, "sh -c 'echo $HOPPER_UNIT'"},
		{[]string{"echo", "it's"}, `echo 'it'\''s'`},
		{[]string{"x", ""}, "x ''"},
		{[]string{"env", "a=b", "--flag=1,2"}, "env a=b --flag=1,2"},
		{[]string{"go", "test", "{unit}"}, "go test {unit}"},
		// What a shell would not read back as written: brace expansion
		// (echo a b, echo 1 2 3) and, first, an assignment instead of the
		// program.
		{[]string{"echo", "--only={a,b}"}, "echo '--only={a,b}'"},
		{[]string{"echo", "{1..3}"}, "echo '{1..3}'"},
		{[]string{"a=b", "x"}, "'a=b' x"},
	} {
		assert.Equal(t, tc.want, Quote(tc.argv))
	}
}

func TestStatus(t *testing.T) {
	assert.Equal(t, "exit status 2", Outcome{ExitCode: 2}.Status())
	assert.Equal(t, "killed by signal SIGTERM", Outcome{ExitCode: -1, Signal: syscall.SIGTERM}.Status())
	assert.Equal(t, "interrupted", Outcome{Cancelled: true}.Status())
	assert.True(t, Outcome{}.Passed())
	assert.False(t, Outcome{ExitCode: 1}.Passed())
}
