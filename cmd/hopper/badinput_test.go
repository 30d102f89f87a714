package main

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Redis that takes connections and never answers (a frozen server, a
// black-holed network) is one line and exit 2 too, within seconds, for the
// commands that would otherwise wait on it.
func TestSilentRedis(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read from or written to
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	url := "redis://" + l.Addr().String()
	for _, args := range [][]string{
		{"work", "--build", "b", "--redis", url, "u", "--", "true"},
		{"report", "--build", "b", "--redis", url},
	} {
		start := time.Now()
		code, out, errs := hopper(t, t.TempDir(), baseEnv(), args...)
		assert.Equal(t, 2, code, "%v: %s", args, errs)
		assert.Empty(t, out)
		assert.Regexp(t, `^hopper `+args[0]+`: cannot reach Redis at `+url+` \(from --redis\): .+\n$`, errs)
		assert.Less(t, time.Since(start), time.Minute, "%v gave up in time", args)
	}
}

// A burnt build id (its tombstone kept, its state gone, as after an expiry)
// is refused by hopper work with exit 2 and a message that says to choose a
// new build id; nothing is re-created, and hopper report calls it expired.
func TestBurntBuildID(t *testing.T) {
	url, build := redisURL(t), redistest.BuildID(t)
	dir := t.TempDir()
	code, _, errs := hopper(t, dir, baseEnv(), "run", "--redis", url, "--build", build, "-j", "1", "u1", "--", "true")
	require.Equal(t, 0, code, errs)

	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prefix := "hopper:{" + build + "}:"
	exists, err := c.Do(ctx, c.B().Exists().Key(prefix+"exists").Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 1, exists, "the finished build left its tombstone")
	for _, k := range []string{"meta", "units", "units:priority", "unit_state", "workers", "attempts"} {
		require.NoError(t, c.Do(ctx, c.B().Del().Key(prefix+k).Build()).Error())
	}

	code, out, errs := hopper(t, dir, baseEnv(), "work", "--redis", url, "--build", build, "--init-timeout", "5", "u1", "--", "true")
	assert.Equal(t, 2, code, errs)
	assert.Empty(t, out)
	assert.Contains(t, errs, build)
	assert.Contains(t, errs, "new build id")
	n, err := c.Do(ctx, c.B().Exists().Key(prefix+"meta", prefix+"units", prefix+"unit_state").Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing of the build re-created")

	code, out, errs = hopper(t, dir, baseEnv(), "report", "--redis", url, "--build", build)
	assert.Equal(t, 3, code, "%s%s", out, errs)
	assert.Contains(t, out+errs, "expired")
}

// A units file that cannot be read (here a directory) is a usage error.
func TestUnreadableUnitsFile(t *testing.T) {
	code, out, errs := hopper(t, t.TempDir(), baseEnv(), "work", "--build", "b", "--redis", "127.0.0.1:1", "--units-from", "/", "--", "true")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, "hopper work: cannot read --units-from /: is a directory\n")
}
