package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On a terminal, `hopper status` redraws one view in place from before the
// build is published until it completes, then exits 0 on its own.
func TestStatusRedrawsOnATerminal(t *testing.T) {
	dir := fixture(t, map[string]string{"a.sh": `sleep 0.4`, "b.sh": `sleep 0.4`})
	url, build := redisURL(t), redistest.BuildID(t)

	cmd := exec.Command(hopperBin, "status", "--build", build, "--redis", url, "--interval", "0.1")
	cmd.Dir, cmd.Env = dir, baseEnv("TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = tty.Close() })
	var mu sync.Mutex
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return // EOF, or EIO once the status process has exited
			}
		}
	}()
	seen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return screen.String()
	}
	require.Eventually(t, func() bool { return strings.Contains(seen(), "not published yet") }, 20*time.Second, 20*time.Millisecond,
		"the view before the build exists: %q", seen())

	code, out, errs := hopper(t, dir, baseEnv(), "work", "--build", build, "--redis", url, "--processes", "2", "a.sh", "b.sh", "--", "sh", "{unit}")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errs)

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "status exits 0 once the build is complete")
	case <-time.After(20 * time.Second):
		t.Fatalf("status still running after the build completed; screen: %q", seen())
	}
	<-read
	s := seen()
	require.True(t, strings.HasPrefix(s, "\x1b[2J"), "a clean screen first: %q", s)
	frames := strings.Split(s, "\x1b[H")[1:]
	require.GreaterOrEqual(t, len(frames), 3, "redrawn in place, from home: %q", s)
	assert.Contains(t, frames[0], "build "+build+": not published yet\x1b[K")
	assert.Contains(t, frames[0], "hopper status: on Redis redis://"+redistest.MinimalUser+":xxxxx@", "the Redis is named on the screen")
	last := frames[len(frames)-1]
	assert.Regexp(t, regexp.MustCompile(`^hopper status: on Redis \S+ \(from --redis\)\x1b\[K\r?\nbuild `+regexp.QuoteMeta(build)+`: complete, 2 of 2 units finalized \(100%\), elapsed \S+\x1b\[K\r?\n`), last)
	assert.Contains(t, last, "passed 2, failed 0, flaky 0, retrying 0, reclaims 0, abandoned 0")
	assert.True(t, strings.HasSuffix(strings.TrimRight(last, "\r\n"), "\x1b[J"), "the rest of the previous view erased: %q", last)
	for _, f := range frames {
		for _, line := range strings.Split(strings.TrimRight(f, "\r\n"), "\n")[:1] {
			assert.Contains(t, line, "\x1b[K", "each line ends by erasing what was left: %q", line)
		}
	}
}
