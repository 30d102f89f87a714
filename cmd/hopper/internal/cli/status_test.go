package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runningBuild starts a Redis container and publishes a build of two units
// that no worker takes: it stays running for as long as the test looks at
// it. It returns the Redis URL and the build id.
func runningBuild(t *testing.T) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := redistest.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, srv.Terminate(ctx))
	})
	build := redistest.BuildID(t)
	b, err := queue.Open(srv.Client(t), build, queue.Options{})
	require.NoError(t, err)
	_, err = b.Join(ctx, "w1", queue.Manifest{UnitIDs: []string{"a", "b"}, Timeout: time.Minute}, queue.JoinOptions{})
	require.NoError(t, err)
	return "redis://" + srv.Addr(), build
}

// mainWithin runs Main, and fails the test when it is still running after
// limit; then it interrupts it, as Ctrl-C would, and waits for it to end.
func mainWithin(t *testing.T, limit time.Duration, args []string, s Streams) int {
	t.Helper()
	signals := make(chan os.Signal, 1)
	s.Signals = signals
	done := make(chan int, 1)
	go func() { done <- Main(args, Env{"TERM": "xterm"}, s) }()
	select {
	case code := <-done:
		return code
	case <-time.After(limit):
		signals <- syscall.SIGINT
		<-done
		t.Fatalf("hopper %s still running after %s", strings.Join(args, " "), limit)
		return -1
	}
}

// The view is redrawn in place only when standard output, where it is
// drawn, is a terminal: redirected from a terminal, `hopper status` prints
// one snapshot and ends, and on a terminal it redraws even when standard
// error is redirected.
func TestStatusWatchesOnlyWhenStdoutIsATerminal(t *testing.T) {
	url, build := runningBuild(t)
	args := []string{"status", "--build", build, "--redis", url, "--interval", "0.05"}

	t.Run("standard output redirected", func(t *testing.T) {
		ptmx, tty, err := pty.Open()
		require.NoError(t, err)
		defer ptmx.Close()
		defer tty.Close()
		out, err := os.Create(t.TempDir() + "/status.txt")
		require.NoError(t, err)
		defer out.Close()

		code := mainWithin(t, 10*time.Second, args, Streams{Stdout: out, Stderr: tty, Terminal: true})
		require.Equal(t, 0, code)
		got, err := os.ReadFile(out.Name())
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(got), "build "+build+": running, 0 of 2 units finalized"), "got %q", got)
		assert.NotContains(t, string(got), "\x1b", "no escape codes in a file: got %q", got)
	})

	t.Run("standard output a terminal", func(t *testing.T) {
		ptmx, tty, err := pty.Open()
		require.NoError(t, err)
		defer ptmx.Close()
		var mu sync.Mutex
		var screen bytes.Buffer
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := ptmx.Read(buf)
				mu.Lock()
				screen.Write(buf[:n])
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		seen := func() string {
			mu.Lock()
			defer mu.Unlock()
			return screen.String()
		}
		var errs bytes.Buffer
		signals := make(chan os.Signal, 1)
		done := make(chan int, 1)
		go func() {
			done <- Main(args, Env{"TERM": "xterm"}, Streams{Stdout: tty, Stderr: &errs, Signals: signals})
		}()
		redrawn := func() bool { return strings.Count(seen(), "\x1b[H") >= 2 }
		ok := assert.Eventually(t, redrawn, 10*time.Second, 20*time.Millisecond, "the view redrawn in place: got %q", seen())
		signals <- syscall.SIGINT
		select {
		case code := <-done:
			assert.Equal(t, 0, code, "stderr: %s", errs.String())
		case <-time.After(10 * time.Second):
			t.Fatal("hopper status still running after Ctrl-C")
		}
		_ = tty.Close()
		if ok {
			assert.True(t, strings.HasPrefix(seen(), "\x1b[2J"), "a clean screen first: got %q", seen())
		}
	})
}
