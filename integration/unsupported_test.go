package integration

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A proxy that does not run WATCH (twemproxy, Envoy's Redis proxy) is
// refused on the first transaction with queue.ErrUnsupportedServer, naming
// the command: for the worker that publishes, and for one that joins a
// published build (which leaves the unit it read pending, for a worker on
// a good connection to reclaim after the timeout).
func TestWatchRefusingProxy(t *testing.T) {
	p := newRefusingProxy(t, srv.Addr(), func(cmd []string) bool { return strings.EqualFold(cmd[0], "WATCH") })
	suite := worker.Suite{Units: units(3), UnitType: "package", Command: "go test {unit}"}
	run := func(id string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cfg := worker.Config{BuildID: id, WorkerID: "ci-1", InitTimeout: 10 * time.Second, Block: 50 * time.Millisecond,
			PollInterval: 20 * time.Millisecond, Output: io.Discard, Log: io.Discard}
		return worker.Run(ctx, p.client(t), suite, cfg, passWith)
	}
	t.Run("publisher", func(t *testing.T) {
		err := run(redistest.BuildID(t))
		require.True(t, errors.Is(err, queue.ErrUnsupportedServer), "got %v", err)
		assert.Contains(t, err.Error(), "WATCH")
	})
	t.Run("joiner", func(t *testing.T) {
		id := redistest.BuildID(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cfg := worker.Config{BuildID: id, WorkerID: "ci-0", Output: io.Discard, Log: io.Discard}
		publisher, err := queue.Open(srv.Client(t), id, queue.Options{})
		require.NoError(t, err)
		_, err = publisher.Join(ctx, cfg.WorkerID, queue.Manifest{UnitIDs: suite.Units, UnitType: "package", Fingerprint: suite.Fingerprint()}, queue.JoinOptions{})
		require.NoError(t, err)
		err = run(id)
		require.True(t, errors.Is(err, queue.ErrUnsupportedServer), "got %v", err)
		assert.Contains(t, err.Error(), "WATCH")
	})
}

// twemproxy closes the connection on a command it does not have. A
// transition whose WATCH loses its connection while the server answers
// PING is refused the same way, at once.
func TestWatchDroppingProxy(t *testing.T) {
	p := newRefusingProxy(t, srv.Addr(), func(cmd []string) bool { return strings.EqualFold(cmd[0], "WATCH") })
	p.hangUp = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	suite := worker.Suite{Units: units(3), UnitType: "package", Command: "go test {unit}"}
	cfg := worker.Config{BuildID: redistest.BuildID(t), WorkerID: "ci-1", InitTimeout: 10 * time.Second, Block: 50 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, Output: io.Discard, Log: io.Discard}
	start := time.Now()
	err := worker.Run(ctx, p.client(t), suite, cfg, passWith)
	t.Logf("worker.Run returned after %v: %v", time.Since(start), err)
	require.True(t, errors.Is(err, queue.ErrUnsupportedServer), "got %v", err)
	assert.Contains(t, err.Error(), "WATCH")
}
