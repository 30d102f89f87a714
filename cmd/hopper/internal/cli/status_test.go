package cli

import (
	"bytes"
	"context"
	"fmt"
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
	url, build, _ := busyBuild(t, 2, 0)
	return url, build
}

// busyBuild is runningBuild with units units, of which workers workers
// (w01, w02, ...) hold one each; it returns the build too.
func busyBuild(t *testing.T, units, workers int) (string, string, *queue.Build) {
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
	ids := make([]string, units)
	for i := range ids {
		ids[i] = fmt.Sprintf("unit-%02d", i+1)
	}
	_, err = b.Join(ctx, "w00", queue.Manifest{UnitIDs: ids, Timeout: time.Minute}, queue.JoinOptions{})
	require.NoError(t, err)
	for i := range workers {
		_, ok, err := b.Reserve(ctx, fmt.Sprintf("w%02d", i+1), queue.ReserveOptions{Block: time.Millisecond})
		require.NoError(t, err)
		require.True(t, ok)
	}
	return "redis://" + srv.Addr(), build, b
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

// On a terminal smaller than the view, each redraw is cut to the screen:
// a view that scrolled would push its headline off the screen, and a copy
// of itself into the scrollback, at every redraw.
func TestStatusFitsTheScreen(t *testing.T) {
	url, build, _ := busyBuild(t, 14, 12)
	const rows, cols = 8, 60
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	require.NoError(t, pty.Setsize(tty, &pty.Winsize{Rows: rows, Cols: cols}))
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
	args := []string{"status", "--build", build, "--redis", url, "--interval", "0.05"}
	go func() {
		done <- Main(args, Env{"TERM": "xterm"}, Streams{Stdout: tty, Stderr: &errs, Signals: signals})
	}()
	// Three redraws: the second one whole.
	assert.Eventually(t, func() bool { return strings.Count(seen(), "\x1b[H") >= 3 }, 10*time.Second, 20*time.Millisecond)
	signals <- syscall.SIGINT
	select {
	case code := <-done:
		require.Equal(t, 0, code, "stderr: %s", errs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("hopper status still running after Ctrl-C")
	}
	_ = tty.Close()

	frames := strings.Split(seen(), "\x1b[H")
	require.GreaterOrEqual(t, len(frames), 4, "got %q", seen())
	frame := frames[2]
	assert.True(t, strings.HasPrefix(frame, "hopper status: on Redis "), "the Redis first: got %q", frame)
	assert.Contains(t, frame, "\nbuild "+build+": running", "then the headline: got %q", frame)
	lines := strings.Split(strings.TrimSuffix(frame, "\x1b[J"), "\n")
	assert.LessOrEqual(t, strings.Count(frame, "\n"), rows-1, "no more lines than the screen holds, the cursor on it: got %q", frame)
	assert.Contains(t, frame, "more lines", "what was left out is said: got %q", frame)
	for _, line := range lines {
		text := strings.TrimSuffix(strings.TrimSuffix(line, "\r"), "\x1b[K")
		assert.Less(t, len([]rune(text)), cols, "no line wraps: got %q", text)
	}
}
