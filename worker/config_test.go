package worker_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
)

func pass(context.Context, queue.Reservation) worker.Result {
	return worker.Result{Outcome: worker.Passed}
}

// Config values out of range are refused before anything is sent, each with
// its own message naming the value (no client is needed to find out).
func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*worker.Config)
		want   string
	}{
		{"no build id", func(c *worker.Config) { c.BuildID = "" }, "build id is empty"},
		{"negative timeout", func(c *worker.Config) { c.Timeout = -time.Second }, "timeout must be positive (at least 1ms), got -1s"},
		{"sub-millisecond timeout", func(c *worker.Config) { c.Timeout = time.Microsecond }, "timeout must be positive (at least 1ms), got 1µs"},
		{"timeout too short for a heartbeat", func(c *worker.Config) { c.Timeout = 2 * time.Millisecond }, "timeout must be at least 3ms"},
		{"negative max unit duration", func(c *worker.Config) { c.MaxUnitDuration = -time.Minute }, "max unit duration must be positive (at least 1ms), got -1m0s"},
		{"negative max requeues", func(c *worker.Config) { c.MaxRequeues = -1 }, "max requeues must not be negative, got -1"},
		{"tolerance below 0", func(c *worker.Config) { c.RequeueTolerance = -0.1 }, "requeue tolerance must be between 0 and 1, got -0.1"},
		{"tolerance above 1", func(c *worker.Config) { c.RequeueTolerance = 1.5 }, "requeue tolerance must be between 0 and 1, got 1.5"},
		{"tolerance NaN", func(c *worker.Config) { c.RequeueTolerance = math.NaN() }, "requeue tolerance must be between 0 and 1, got NaN"},
		{"negative TTL", func(c *worker.Config) { c.TTL = -time.Hour }, "TTL must be positive (at least 1ms), got -1h0m0s"},
		{"TTL within timeout plus a heartbeat", func(c *worker.Config) { c.TTL, c.Timeout = 4*time.Second, 3*time.Second }, "TTL 4s must be longer than the timeout 3s plus a heartbeat interval 1s"},
		{"TTL below a long timeout", func(c *worker.Config) { c.Timeout = 5 * time.Hour }, "TTL 4h0m0s must be longer than the timeout 5h0m0s plus a heartbeat interval 30s"},
		{"negative tombstone TTL", func(c *worker.Config) { c.TombstoneTTL = -1 }, "tombstone TTL must be positive"},
		{"negative init timeout", func(c *worker.Config) { c.InitTimeout = -time.Second }, "init timeout must be positive"},
		{"negative block", func(c *worker.Config) { c.Block = -time.Second }, "block must be positive"},
		{"negative poll interval", func(c *worker.Config) { c.PollInterval = -time.Second }, "poll interval must be positive"},
		{"negative lease TTL", func(c *worker.Config) { c.LeaseTTL = -time.Second }, "lease TTL must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := worker.Config{BuildID: "b1", WorkerID: "w1"}
			tt.modify(&cfg)
			err := worker.Run(t.Context(), nil, worker.Suite{}, cfg, pass)
			if !errors.Is(err, worker.ErrInvalidConfig) {
				t.Fatalf("Run = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestRunRefusesNilFunc(t *testing.T) {
	err := worker.Run(t.Context(), nil, worker.Suite{}, worker.Config{BuildID: "b1"}, nil)
	if !errors.Is(err, worker.ErrInvalidConfig) {
		t.Errorf("Run(nil Func) = %v, want ErrInvalidConfig", err)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{worker.ErrAborted, 4},
		{errors.Join(errors.New("x"), worker.ErrAborted), 4},
		{queue.ErrCorrupt, 2},
		{queue.ErrBuildBurnt, 2},
		{context.Canceled, 2},
		{worker.ErrHeartbeatLost, 2},
	}
	for _, tt := range tests {
		if got := worker.ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestSuiteFingerprintDefaultsTheUnitType(t *testing.T) {
	a := worker.Suite{Units: []string{"x"}, Command: "c"}.Fingerprint()
	b := worker.Suite{Units: []string{"x"}, Command: "c", UnitType: "file"}.Fingerprint()
	if a.Sum != b.Sum {
		t.Errorf("empty unit type and %q fingerprint differently", "file")
	}
}
