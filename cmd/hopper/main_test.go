package main

// End-to-end tests of the hopper binary: it is built once with `go build`
// (with -race when the tests run with -race) and run as separate processes
// against a real Redis in a container (internal/redistest), always as an ACL
// user denied every scripting command.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
)

var (
	srv       *redistest.Server
	hopperBin string
	// cacheDir is every hopper process's XDG_CACHE_HOME: the suites'
	// timings that hopper run keeps there stay out of the user's own.
	cacheDir string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hopper-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hopperBin = filepath.Join(dir, "hopper")
	cacheDir = filepath.Join(dir, "cache")
	args := []string{"build", "-o", hopperBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	if out, err := exec.Command(goTool, append(args, ".")...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: go build of cmd/hopper: %v\n%s", err, out)
		os.Exit(1)
	}
	// The binary always connects as redistest.NoScriptUser: the command
	// never needs a script.
	os.Setenv("HOPPER_TEST_ACL", "1")
	code := redistest.Main(m, &srv)
	os.RemoveAll(dir)
	os.Exit(code)
}

// redisURL is the container's address with the scripting-denied user; the
// user is created by the first client.
func redisURL(t testing.TB) string {
	t.Helper()
	srv.Client(t) // creates redistest.NoScriptUser on first use
	return fmt.Sprintf("redis://%s:%s@%s", redistest.NoScriptUser, redistest.NoScriptUser, srv.Addr())
}

// baseEnv is the environment of every hopper process: nothing of the
// test's own (no CI markers, no REDIS_URL), so that each test says what the
// command sees.
func baseEnv(extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C", "GORACE=halt_on_error=1",
		"XDG_CACHE_HOME=" + cacheDir}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	return append(env, extra...)
}

// syncBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running hopper.
type proc struct {
	t              testing.TB
	cmd            *exec.Cmd
	args           []string
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int
}

// start runs hopper args in dir with env.
func start(t testing.TB, dir string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, args: args, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(hopperBin, args...)
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start hopper %v: %v", args, err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.code = -int(ws.Signal())
			}
		} else if err != nil {
			p.code = -1000
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit code (minus the
// signal number when a signal killed it). A data race reported by a -race
// binary fails the test.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		p.t.Fatalf("hopper %v still running after %s\nstdout:\n%s\nstderr:\n%s", p.args, timeout, p.stdout, p.stderr)
	}
	if strings.Contains(p.stderr.String(), "WARNING: DATA RACE") {
		p.t.Errorf("hopper %v: data race:\n%s", p.args, p.stderr)
	}
	return p.code
}

// hopper runs hopper to the end.
func hopper(t testing.TB, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := start(t, dir, env, args...)
	code = p.wait(2 * time.Minute)
	return code, p.stdout.String(), p.stderr.String()
}

// waitFile waits until path holds a complete line and returns it trimmed.
func waitFile(t testing.TB, path string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s was not written within %s", path, timeout)
	return ""
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(raw)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	return rest[0] != 'Z' && rest[0] != 'X'
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
