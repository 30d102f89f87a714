package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
)

// syncBuffer is a bytes.Buffer safe for the worker's log and a test's reads.
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

func newClient(t *testing.T) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

func buildID(t *testing.T) string {
	return "t-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// pauseWrites makes the server hold every write command for d (CLIENT
// PAUSE ... WRITE): the transitions of a worker then hang as on a Redis
// that stopped answering, while the test's own reads go on.
func pauseWrites(t *testing.T, client rueidis.Client, d time.Duration) {
	t.Helper()
	ms := strconv.FormatInt(d.Milliseconds(), 10)
	if err := client.Do(context.Background(), client.B().Arbitrary("CLIENT", "PAUSE").Args(ms, "WRITE").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.Do(context.Background(), client.B().Arbitrary("CLIENT", "UNPAUSE").Build()).Error()
	})
}

// The errors a worker ends with name the worker once, then what happened:
// "worker w1: aborted: ...", not "worker w1: worker: aborted: ...", which
// the command would print after its own "hopper work: ". errors.Is still
// finds the sentinel, which ExitCode reads.
func TestStopErrorsNameTheWorkerOnce(t *testing.T) {
	client := newClient(t)
	tests := []struct {
		name     string
		maxUnit  time.Duration
		run      func(ctx context.Context)
		sentinel error
		want     string // the start of the message
	}{
		{"aborted", 100 * time.Millisecond, func(ctx context.Context) { <-ctx.Done() }, worker.ErrAborted,
			"worker w1: aborted: u1 ran past 0.1s (max unit duration) + 0.3s (timeout)"},
		{"heartbeat lost", time.Hour, func(context.Context) {
			pauseWrites(t, client, time.Second) // every renewal hangs past Timeout
			time.Sleep(1500 * time.Millisecond)
		}, worker.ErrHeartbeatLost, "worker w1: heartbeat lost: no renewal of u1 succeeded for 0.3s (timeout): "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := worker.Config{BuildID: buildID(t), WorkerID: "w1", Timeout: 300 * time.Millisecond,
				MaxUnitDuration: tt.maxUnit, Block: 20 * time.Millisecond, Log: io.Discard, Output: io.Discard}
			err := worker.Run(t.Context(), client, worker.Suite{Units: []string{"u1"}}, cfg, func(ctx context.Context, r queue.Reservation) worker.Result {
				tt.run(ctx)
				return worker.Result{Outcome: worker.Passed}
			})
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("Run = %v, want %v", err, tt.sentinel)
			}
			if got := err.Error(); !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want it to start %q", got, tt.want)
			}
			if got := err.Error(); strings.Count(got, "worker") != 1 {
				t.Errorf("got %q, want %q once", got, "worker")
			}
		})
	}
}

// A unit that overruns is stopped at MaxUnitDuration+Timeout
// (docs/design.md#heartbeat) even when Redis stops answering meanwhile: a
// heartbeat call that hangs (its commit, then finding out whether the
// commit landed, for up to Timeout) must not push the abort back by as
// long again.
func TestAbortOnTimeWhileRedisStalls(t *testing.T) {
	client := newClient(t)
	var log syncBuffer
	cfg := worker.Config{BuildID: buildID(t), WorkerID: "w1", Timeout: time.Second,
		MaxUnitDuration: 100 * time.Millisecond, Block: 20 * time.Millisecond, Log: &log, Output: io.Discard}
	type stop struct {
		after  time.Duration
		logged string
	}
	stopped := make(chan stop, 1) // an aborted Func may return after Run did
	err := worker.Run(t.Context(), client, worker.Suite{Units: []string{"u1"}}, cfg, func(ctx context.Context, r queue.Reservation) worker.Result {
		start := time.Now()
		pauseWrites(t, client, 5*time.Second) // every heartbeat hangs
		<-ctx.Done()
		stopped <- stop{time.Since(start), log.String()}
		return worker.Result{Outcome: worker.Failed}
	})
	_ = client.Do(context.Background(), client.B().Arbitrary("CLIENT", "UNPAUSE").Build()).Error()
	if !errors.Is(err, worker.ErrAborted) {
		t.Fatalf("Run = %v, want ErrAborted", err)
	}
	s := <-stopped
	// The Func starts a moment after the worker's abort timer (it runs in
	// a goroutine of its own), and a loaded machine delays the stop; the
	// bug stopped it at about 2 s, after the heartbeat's hanging call.
	const abortAt, early, late = 1100 * time.Millisecond, 100 * time.Millisecond, 600 * time.Millisecond
	if s.after < abortAt-early || s.after > abortAt+late {
		t.Errorf("got the unit stopped after %v, want after %v (max unit duration + timeout), %v early to %v late", s.after, abortAt, early, late)
	}
	if want := "Aborting worker: u1 exceeded 0.1s\n"; !strings.Contains(s.logged, want) {
		t.Errorf("got log %q when the unit was stopped, want it to say %q", s.logged, want)
	}
}

// A settlement that fails ends the worker with an error naming the worker,
// the operation and the unit, whether Redis hung before the commit (the
// settlement's own deadline, Timeout, passes) or during it (whether it
// landed is unknown): the user must learn which unit's result may be lost.
func TestSettlementFailureNamesTheUnit(t *testing.T) {
	client := newClient(t)
	for _, tt := range []struct {
		pause string // what the server holds: every command, or writes
		fail  bool
		want  string
	}{
		{"ALL", false, "worker w1: finalizing u1: "},
		{"WRITE", false, "worker w1: finalizing u1: "},
		{"WRITE", true, "worker w1: requeueing u1: "},
	} {
		t.Run(tt.pause, func(t *testing.T) {
			cfg := worker.Config{BuildID: buildID(t), WorkerID: "w1", Timeout: 300 * time.Millisecond,
				MaxUnitDuration: time.Hour, MaxRequeues: 1, RequeueTolerance: 1, Block: 20 * time.Millisecond, Log: io.Discard, Output: io.Discard}
			err := worker.Run(t.Context(), client, worker.Suite{Units: []string{"u1"}}, cfg, func(ctx context.Context, r queue.Reservation) worker.Result {
				ms := "1500"
				if err := client.Do(ctx, client.B().Arbitrary("CLIENT", "PAUSE").Args(ms, tt.pause).Build()).Error(); err != nil {
					t.Error(err)
				}
				if tt.fail {
					return worker.Result{Outcome: worker.Failed}
				}
				return worker.Result{Outcome: worker.Passed}
			})
			_ = client.Do(context.Background(), client.B().Arbitrary("CLIENT", "UNPAUSE").Build()).Error()
			if err == nil {
				t.Fatal("Run = nil, want an error")
			}
			if got := err.Error(); !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want it to start %q", got, tt.want)
			}
			if got := worker.ExitCode(err); got != worker.ExitInfrastructure {
				t.Errorf("got exit code %d, want %d", got, worker.ExitInfrastructure)
			}
		})
	}
}

// A unit reclaimed while it runs: the owner's heartbeat is refused (STALE),
// it stops renewing without calling that a Redis failure, lets the unit
// finish, and its settlement is refused, recorded as stale_rejected, and
// its output discarded (docs/design.md#heartbeat). The thief then goes silent,
// and the owner takes the unit back and finishes it.
func TestHeartbeatRefusedAfterAReclaim(t *testing.T) {
	client := newClient(t)
	var log, out syncBuffer
	id := buildID(t)
	cfg := worker.Config{BuildID: id, WorkerID: "w1", Timeout: 300 * time.Millisecond,
		MaxUnitDuration: time.Hour, Block: 20 * time.Millisecond, Log: &log, Output: &out}
	thief, err := queue.Open(client, id, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = worker.Run(t.Context(), client, worker.Suite{Units: []string{"u1"}}, cfg, func(ctx context.Context, r queue.Reservation) worker.Result {
		if r.ReclaimCount > 0 {
			return worker.Result{Outcome: worker.Passed, Output: []byte("counted output\n")}
		}
		if rc, err := thief.Reclaim(ctx, "thief", 0, 3); err != nil || rc.Status != queue.ReclaimTaken {
			t.Errorf("Reclaim = %+v, %v; want the unit taken", rc, err)
		}
		time.Sleep(500 * time.Millisecond) // several heartbeats, all refused
		return worker.Result{Outcome: worker.Passed, Output: []byte("stale output\n")}
	})
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got, want := out.String(), "counted output\n"; got != want {
		t.Errorf("got output %q, want %q (the stale attempt's is discarded)", got, want)
	}
	got := log.String()
	if !strings.Contains(got, "reservation for u1 is stale; result discarded") {
		t.Errorf("got log %q, want the stale result reported", got)
	}
	if strings.Contains(got, "heartbeat failed") {
		t.Errorf("got log %q, want no heartbeat failure: a refusal is not Redis failing", got)
	}
	evs, err := client.Do(t.Context(), client.B().Xrange().Key("hopper:{"+id+"}:attempts").Start("-").End("+").Build()).ToAny()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(fmt.Sprint(evs), `"type":"stale_rejected"`); got != 1 {
		t.Errorf("got %d stale_rejected events, want 1: %v", got, evs)
	}
}
