//go:build faults

package integration

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fault tests (go test -tags faults, `make test-faults`) run real worker
// processes (internal/faultworker) against a Redis container of their own,
// so that pausing, restarting or emptying it touches no other test, and
// inject one fault each. What they check afterwards is the same: the attempt
// log holds exactly one finalized event per unit, finalized_count equals the
// number of units, and the report agrees.

// faultServer starts a Redis container for one test, terminated when the
// test ends. cmd, when not empty, replaces the server's arguments (see
// redistest's HOPPER_REDIS_CMD).
func faultServer(t *testing.T, cmd string) *redistest.Server {
	t.Helper()
	if cmd != "" {
		t.Setenv("HOPPER_REDIS_CMD", cmd)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := redistest.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// A test that failed while the server was paused leaves it paused.
		_ = s.Unpause(ctx)
		if err := s.Terminate(ctx); err != nil {
			t.Errorf("terminate the test's Redis: %v", err)
		}
	})
	return s
}

// persistentServerCmd is the server's command with every write appended to
// an AOF and fsynced before the reply, so that a restart keeps the data.
func persistentServerCmd() string {
	base := os.Getenv("HOPPER_REDIS_CMD")
	if strings.TrimSpace(base) == "" {
		base = `--save "" --protected-mode no --port 6379`
	}
	return base + " --appendonly yes --appendfsync always"
}

// faultBuild is one build on a test's own server, seen from outside.
func faultBuild(t *testing.T, s *redistest.Server) *lifecycle {
	t.Helper()
	e := &env{t: t, ctx: t.Context(), client: s.Client(t), admin: s.AdminClient(t)}
	id := redistest.BuildID(t)
	e.keys = queue.BuildKeys(id)
	b, err := queue.Open(e.client, id, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	e.build = b
	return &lifecycle{env: e, id: id}
}

// buildFaultWorker compiles internal/faultworker into the test's temp
// folder, with the race detector when the tests have it.
func buildFaultWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "faultworker")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "github.com/hopper-queue/hopper/internal/faultworker")
	start := time.Now()
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...).CombinedOutput()
	require.NoError(t, err, "go build faultworker:\n%s", out)
	t.Logf("built faultworker (race %v) in %v", raceEnabled, time.Since(start).Round(time.Millisecond))
	return bin
}

// workerProc is one faultworker process.
type workerProc struct {
	id     string
	cmd    *exec.Cmd
	stdout *lineLog
	stderr *lineLog
	done   chan struct{} // closed once the process has exited and its output is read
	code   int           // exit code, -1 when killed by a signal
}

// workerFlags are the faultworker flags a fault test sets; the rest keep
// faultworker's defaults.
type workerFlags struct {
	unitTime, slowTime time.Duration
	slowUnit           string
	timeout            time.Duration
	connTimeout        time.Duration
}

func (f workerFlags) args() []string {
	var a []string
	add := func(name string, d time.Duration) {
		if d != 0 {
			a = append(a, "-"+name, d.String())
		}
	}
	add("unit-time", f.unitTime)
	add("slow-time", f.slowTime)
	add("timeout", f.timeout)
	add("conn-timeout", f.connTimeout)
	if f.slowUnit != "" {
		a = append(a, "-slow-unit", f.slowUnit)
	}
	return a
}

// startWorker runs a faultworker as worker id of build l, on addr. It is
// killed, if still running, when the test ends.
func startWorker(t *testing.T, bin, addr string, l *lifecycle, id string, units []string, f workerFlags) *workerProc {
	t.Helper()
	args := append([]string{"-redis", addr, "-build", l.id, "-worker", id, "-units", strings.Join(units, ",")}, f.args()...)
	acl := os.Getenv("HOPPER_TEST_ACL") != ""
	if acl {
		// As the code under test runs everywhere else: the scripting-denied
		// user, which l's client (made by Server.Client) has created.
		args = append(args, "-user", redistest.NoScriptUser)
	}
	cmd := exec.Command(bin, args...)
	if acl {
		cmd.Env = append(os.Environ(), "HOPPER_REDIS_PASSWORD="+redistest.NoScriptUser)
	}
	p := &workerProc{id: id, cmd: cmd, stdout: newLineLog(), stderr: newLineLog(), done: make(chan struct{}), code: -1}
	outPipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	errPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var reading sync.WaitGroup
	reading.Go(func() { p.stdout.readFrom(outPipe) })
	reading.Go(func() { p.stderr.readFrom(errPipe) })
	go func() {
		reading.Wait() // the pipes must be drained before Wait closes them
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			p.code = 0
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process ignores SIGKILL until continued on some kernels
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("worker %s stdout:\n%s\nstderr:\n%s", id, p.stdout, p.stderr)
		}
	})
	return p
}

// signal sends sig to the worker's process (only this process: the test
// started it and knows its pid).
func (p *workerProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig), "signal %v to worker %s (pid %d)", sig, p.id, p.cmd.Process.Pid)
}

// wait waits up to d for the process to exit and returns its exit code.
func (p *workerProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("worker %s still running after %v\nstdout:\n%s\nstderr:\n%s", p.id, d, p.stdout, p.stderr)
		return 0
	}
}

// exited reports whether the process has exited.
func (p *workerProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// lineLog collects a process's output lines as they come.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{} // closed and replaced at each new line
}

func newLineLog() *lineLog { return &lineLog{more: make(chan struct{})} }

func (l *lineLog) readFrom(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		close(l.more)
		l.more = make(chan struct{})
		l.mu.Unlock()
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// find returns the first line with prefix, if any.
func (l *lineLog) find(prefix string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.HasPrefix(line, prefix) {
			return line, true
		}
	}
	return "", false
}

// waitFor waits up to d for a line starting with prefix and returns it.
func (l *lineLog) waitFor(ctx context.Context, prefix string, d time.Duration) (string, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		more := l.more
		l.mu.Unlock()
		if line, ok := l.find(prefix); ok {
			return line, true
		}
		select {
		case <-more:
		case <-deadline.C:
			return "", false
		case <-ctx.Done():
			return "", false
		}
	}
}

// started returns the unit a worker started first, waiting up to d.
func (p *workerProc) started(t *testing.T, d time.Duration) string {
	t.Helper()
	line, ok := p.stdout.waitFor(t.Context(), "@start ", d)
	require.True(t, ok, "worker %s started no unit within %v\nstderr:\n%s", p.id, d, p.stderr)
	return strings.Fields(line)[1]
}

// exitLine is the worker's "@exit <code> <error>" line.
func (p *workerProc) exitLine() string {
	line, _ := p.stderr.find("@exit ")
	return line
}

// waitRedis waits until c answers PING again (after a pause or a restart).
func waitRedis(t *testing.T, c rueidis.Client) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		return c.Do(ctx, c.B().Ping().Build()).Error() == nil
	}, 30*time.Second, 50*time.Millisecond, "Redis does not answer PING")
}

// waitFinalized waits up to d until the log holds a finalized event of unit
// and returns it.
func waitFinalized(t *testing.T, l *lifecycle, unit string, d time.Duration) map[string]any {
	t.Helper()
	var found map[string]any
	require.Eventually(t, func() bool {
		for _, ev := range l.events() {
			if ev["type"] == events.TypeFinalized && ev["unit_id"] == unit {
				found = ev
				return true
			}
		}
		return false
	}, d, 20*time.Millisecond, "no finalized event of %s", unit)
	return found
}

// faultFigures counts what the fault tests did, for the closing figures:
// go test -v -tags faults prints one "figures:" line per test.
type faultFigures struct {
	faults, builds, lost, doubled int
}

// requireExactlyOnce checks the invariant every fault test ends with: each
// unit of units has exactly one finalized event, nothing else was
// finalized, finalized_count is the number of units and nothing is pending.
// It returns the units lost (no finalized event) and finalized twice.
func requireExactlyOnce(t *testing.T, l *lifecycle, units []string) (lost, doubled int) {
	t.Helper()
	count := map[string]int{}
	for _, ev := range l.events() {
		if ev["type"] == events.TypeFinalized {
			count[ev["unit_id"].(string)]++
		}
	}
	for _, u := range units {
		switch n := count[u]; {
		case n == 0:
			lost++
			t.Errorf("unit %s was never finalized", u)
		case n > 1:
			doubled++
			t.Errorf("unit %s was finalized %d times", u, n)
		}
		delete(count, u)
	}
	assert.Empty(t, count, "finalized events of units not in the build")
	assert.Equal(t, strconv.Itoa(len(units)), l.hash(l.keys.Meta)["finalized_count"], "finalized_count")
	assert.Empty(t, l.pending(l.keys.Units), "entries left pending in units")
	assert.Empty(t, l.pending(l.keys.Priority), "entries left pending in units:priority")
	return lost, doubled
}

// reportOn runs the report on client, with test-sized waits.
func reportOn(t *testing.T, c rueidis.Client, buildID string, opts report.Options) *report.Report {
	t.Helper()
	if opts.PollInterval == 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	if opts.InitTimeout == 0 {
		opts.InitTimeout = 5 * time.Second
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	r, err := report.Run(t.Context(), c, buildID, opts)
	require.NoError(t, err)
	return r
}

// logFigures prints a test's figures in one greppable line.
func logFigures(t *testing.T, f faultFigures) {
	t.Helper()
	t.Logf("figures: faults=%d builds_completed=%d units_lost=%d units_finalized_twice=%d", f.faults, f.builds, f.lost, f.doubled)
}
