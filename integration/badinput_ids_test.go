package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// badInputs counts the bad inputs the badinput tests try, for the closing
// figures (go test -v -run BadInput prints them).
var badInputs atomic.Int64

// logBadInputs prints the running count of bad inputs tried, for the
// closing figures: the last line of a run is its total.
func logBadInputs(t *testing.T) {
	t.Logf("figures: bad_inputs_tried=%d (running total)", badInputs.Load())
}

// badIDs are ids that no boundary may take: they name nothing.
var badIDs = []struct{ name, id, says string }{
	{"empty", "", "is empty"},
	{"oversized", strings.Repeat("x", queue.MaxIDBytes+1), "is 1025 bytes, over 1024"},
	{"not UTF-8", "bad\xff\xfe", `"bad\xff\xfe" is not valid UTF-8`},
}

// Every entry point that takes a worker id or a unit id refuses an empty,
// oversized or non-UTF-8 one with ErrInvalidArgument naming it, before
// anything is sent: no key of the build changes (guard keys, leader and
// tombstone included).
func TestBadInputIDs(t *testing.T) {
	defer logBadInputs(t)
	l := published(t, "u1", "u2")
	r := l.reservation("w1")
	res := queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}
	const ttl = "600000"
	withWorker := func(id string) queue.Reservation { x := r; x.WorkerID = id; return x }
	withUnit := func(id string) queue.Reservation { x := r; x.UnitID = id; return x }
	argv := func(mode, worker, unit string) []string {
		s, e, dc := string(r.Stream), r.EntryID, "1"
		switch mode {
		case "delivery_accounting":
			return []string{mode, worker, ttl, s, e, unit}
		case "heartbeat":
			return []string{mode, worker, ttl, s, e, dc, unit}
		case "finalize":
			return []string{mode, worker, ttl, s, e, dc, unit, "passed", "1"}
		case "requeue":
			return []string{mode, worker, ttl, s, e, dc, unit, "file", "1", "1", "1"}
		case "abandoned":
			return []string{mode, worker, ttl, s, e, dc, unit, "1"}
		case "reclaim":
			return []string{mode, worker, ttl, "0", "3"}
		case "liveness":
			return []string{mode, worker, ttl, unit}
		}
		return []string{mode, worker, ttl, "{}"} // worker_error, stale_rejected
	}
	transition := func(a []string) error {
		_, err := queue.Transition(l.ctx, l.client, l.scriptKeys(), a)
		return err
	}
	workerBoundaries := map[string]func(id string) error{
		"AccountDelivery": func(id string) error {
			_, err := l.build.AccountDelivery(l.ctx, id, r.Stream, r.EntryID, r.UnitID)
			return err
		},
		"Heartbeat": func(id string) error { return l.build.Heartbeat(l.ctx, withWorker(id)) },
		"Finalize":  func(id string) error { return l.build.Finalize(l.ctx, withWorker(id), res) },
		"Requeue": func(id string) error {
			x := withWorker(id)
			x.UnitType = "file"
			_, err := l.build.Requeue(l.ctx, x, res, queue.Budgets{})
			return err
		},
		"Abandon": func(id string) error { return l.build.Abandon(l.ctx, withWorker(id), 1) },
		"Reclaim": func(id string) error {
			_, err := l.build.Reclaim(l.ctx, id, 0, 3)
			return err
		},
		"Liveness":       func(id string) error { return l.build.Liveness(l.ctx, id, "") },
		"AppendPrebuilt": func(id string) error { return l.build.AppendPrebuilt(l.ctx, id, []byte(`{}`)) },
		"Reserve": func(id string) error {
			_, _, err := l.build.Reserve(l.ctx, id, quick)
			return err
		},
		"TryLease": func(id string) error {
			_, _, err := l.build.TryLease(l.ctx, id, 0)
			return err
		},
		"Join": func(id string) error {
			_, err := l.build.Join(l.ctx, id, manifestOf("u1", "u2"), fastJoin)
			return err
		},
	}
	unitBoundaries := map[string]func(id string) error{
		"AccountDelivery": func(id string) error {
			_, err := l.build.AccountDelivery(l.ctx, "w1", r.Stream, r.EntryID, id)
			return err
		},
		"Heartbeat": func(id string) error { return l.build.Heartbeat(l.ctx, withUnit(id)) },
		"Finalize":  func(id string) error { return l.build.Finalize(l.ctx, withUnit(id), res) },
		"Requeue": func(id string) error {
			x := withUnit(id)
			x.UnitType = "file"
			_, err := l.build.Requeue(l.ctx, x, res, queue.Budgets{})
			return err
		},
		"Abandon":  func(id string) error { return l.build.Abandon(l.ctx, withUnit(id), 1) },
		"Liveness": func(id string) error { return l.build.Liveness(l.ctx, "w1", id) }, // "" means no unit
	}
	for _, mode := range []string{"delivery_accounting", "reclaim", "heartbeat", "finalize", "requeue", "abandoned", "liveness", "worker_error", "stale_rejected"} {
		workerBoundaries["Transition "+mode] = func(id string) error { return transition(argv(mode, id, r.UnitID)) }
		switch mode {
		case "delivery_accounting", "heartbeat", "finalize", "requeue", "abandoned", "liveness":
			unitBoundaries["Transition "+mode] = func(id string) error { return transition(argv(mode, "w1", id)) }
		}
	}

	check := func(t *testing.T, what string, boundaries map[string]func(string) error) {
		for name, call := range boundaries {
			for _, bad := range badIDs {
				if bad.id == "" && what == "unit id" && (name == "Liveness" || name == "Transition liveness") {
					continue // an empty current unit is "none"
				}
				t.Run(name+"/"+bad.name, func(t *testing.T) {
					badInputs.Add(1)
					l.requireUnchanged(func() {
						err := call(bad.id)
						require.ErrorIs(t, err, queue.ErrInvalidArgument)
						assert.Contains(t, err.Error(), what+" "+bad.says)
					})
				})
			}
		}
	}
	t.Run("worker id", func(t *testing.T) { check(t, "worker id", workerBoundaries) })
	t.Run("unit id", func(t *testing.T) { check(t, "unit id", unitBoundaries) })
	t.Run("build id", func(t *testing.T) {
		for _, bad := range append(badIDs[1:], struct{ name, id, says string }{"brace", "ci-{7}", `"ci-{7}" holds a brace`}) {
			badInputs.Add(1)
			_, err := queue.Open(l.client, bad.id, queue.Options{})
			require.ErrorIs(t, err, queue.ErrInvalidArgument, bad.name)
			assert.Contains(t, err.Error(), "build id "+bad.says)
		}
		badInputs.Add(1)
		_, err := queue.Open(l.client, "", queue.Options{})
		require.ErrorIs(t, err, queue.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "build id is empty")
	})
}

// The worker API refuses a bad worker id, build id or unit id before
// anything is sent, naming it, and ExitCode maps the refusal to 2. The
// suite's unit ids are checked as a manifest is (queue.ErrInvalidArgument,
// "unit id #n"); no key of the build appears.
func TestBadInputWorkerRunIDs(t *testing.T) {
	defer logBadInputs(t)
	pass := func(context.Context, queue.Reservation) worker.Result { return worker.Result{Outcome: worker.Passed} }
	for _, bad := range badIDs {
		if bad.id == "" {
			continue // empty units: an empty suite, which is a valid build
		}
		t.Run("unit "+bad.name, func(t *testing.T) {
			badInputs.Add(1)
			l := newLifecycle(t)
			l.requireUnchanged(func() {
				cfg := worker.Config{BuildID: l.id, WorkerID: "w1", Log: io.Discard}
				err := worker.Run(l.ctx, l.client, worker.Suite{Units: []string{"ok", bad.id}}, cfg, pass)
				require.ErrorIs(t, err, queue.ErrInvalidArgument)
				assert.Contains(t, err.Error(), "unit id #2 "+bad.says)
				assert.Equal(t, worker.ExitInfrastructure, worker.ExitCode(err))
			})
		})
	}
}

// A Config value out of range is refused with worker.ErrInvalidConfig
// naming it (worker.Run's doc: "cfg out of range (ErrInvalidConfig)"), as
// an empty build id already is.
//
// What it guards: left to queue.Open and Join, an oversized, non-UTF-8 or
// braced BuildID, and an oversized or non-UTF-8 WorkerID, would come back
// as queue.ErrInvalidArgument only, and the worker's own prefix would print
// the raw bytes of a non-UTF-8 worker id ("worker bad\xff\xfe: ...").
// Config.withDefaults (worker/config.go) checks both ids with the queue's
// rules and wraps the error in ErrInvalidConfig, so that errors.Is holds
// for both sentinels. Nothing is written either way.
func TestBadInputWorkerConfigIDs(t *testing.T) {
	defer logBadInputs(t)
	pass := func(context.Context, queue.Reservation) worker.Result { return worker.Result{Outcome: worker.Passed} }
	cases := []struct {
		name            string
		build, workerID string
		says            string
	}{
		{"oversized build id", strings.Repeat("b", queue.MaxIDBytes+1), "w1", "build id is 1025 bytes"},
		{"non-UTF-8 build id", "b\xff", "w1", `build id "b\xff" is not valid UTF-8`},
		{"braced build id", "ci-{7}", "w1", `build id "ci-{7}" holds a brace`},
		{"oversized worker id", "", strings.Repeat("w", queue.MaxIDBytes+1), "worker id is 1025 bytes"},
		{"non-UTF-8 worker id", "", "w\xff", `worker id "w\xff" is not valid UTF-8`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			badInputs.Add(1)
			l := newLifecycle(t)
			build := c.build
			if build == "" {
				build = l.id
			}
			l.requireUnchanged(func() {
				err := worker.Run(l.ctx, l.client, worker.Suite{Units: []string{"a"}}, worker.Config{BuildID: build, WorkerID: c.workerID, Log: io.Discard}, pass)
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.says)
				assert.True(t, errors.Is(err, worker.ErrInvalidConfig), "got %.100q, want the documented error of a Config value out of range, worker.ErrInvalidConfig", err)
				assert.Equal(t, worker.ExitInfrastructure, worker.ExitCode(err))
			})
		})
	}
}

// The report refuses at once a build id that cannot name a build, naming
// it, as it refuses an empty one (ErrInvalidOptions), rather than polling
// for InitTimeout (300 s by default) for keys that can never exist.
//
// What it guards: checking only for an empty id, report.Run would wait the
// whole init timeout on a braced, oversized or non-UTF-8 build id and end
// "missing" (exit 2) with no word about the id. It refuses the ids
// queue.Open refuses, wrapped in ErrInvalidOptions (report/wait.go).
func TestBadInputReportBuildID(t *testing.T) {
	defer logBadInputs(t)
	c := srv.Client(t)
	for _, bad := range append(badIDs[1:], struct{ name, id, says string }{"brace", "ci-{7}", `"ci-{7}" holds a brace`}) {
		t.Run(bad.name, func(t *testing.T) {
			badInputs.Add(1)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			r, err := report.Run(ctx, c, bad.id, report.Options{InitTimeout: 3 * time.Second, PollInterval: 50 * time.Millisecond})
			elapsed := time.Since(start)
			if err == nil {
				t.Errorf("build id %s: got verdict %s after %v (%.100q), want ErrInvalidOptions at once", bad.name, r.Verdict, elapsed.Round(time.Millisecond), r.Headline)
				return
			}
			assert.ErrorIs(t, err, report.ErrInvalidOptions)
			assert.Contains(t, err.Error(), bad.says)
			assert.Less(t, elapsed, time.Second)
		})
	}
}

// Ids with braces are legal unit and worker ids ("spec/{a}_spec.rb",
// "ci-{7}"), but a brace in a key name can change its Redis Cluster hash
// tag. Every key the code under test writes for a build must stay in the
// build's slot, whatever braces the unit and worker ids hold: a worker-run
// build (with a requeue, an abandon and a reclaim, so that every kind of
// guard key is made), and transitions through Transition on keys the caller
// chose, untagged and tagged. Every key written is caught as it is written
// (keyspace notifications) and its slot asked of a cluster-enabled server
// (CLUSTER KEYSLOT), an oracle independent of the project's CRC16.
func TestBadInputBracesKeepTheSlot(t *testing.T) {
	defer logBadInputs(t)
	oracle := slotOracle(t)
	slotOf := func(key string) int64 {
		n, err := oracle.Do(t.Context(), oracle.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		require.NoError(t, err)
		return n
	}
	written := watchWrites(t)

	t.Run("worker-run build", func(t *testing.T) {
		units := []string{"spec/{a}_spec.rb", "{", "}", "{}", "a}b{c", "{x}"}
		f := newFleet(t, units...)
		var stuck atomic.Int32
		cfgs := []worker.Config{f.config("ci-{evil}-1"), f.config("}{"), f.config("{")}
		for i := range cfgs {
			cfgs[i].MaxRequeues, cfgs[i].RequeueTolerance = 1, 1
			cfgs[i].Timeout, cfgs[i].MaxUnitDuration = 600*time.Millisecond, 300*time.Millisecond
		}
		errs := f.run(cfgs, func(ctx context.Context, r queue.Reservation) worker.Result {
			switch {
			case r.UnitID == "{" && r.RetryIndex == 0:
				return worker.Result{Outcome: worker.Failed, Errors: failure(r.UnitID, "flake")}
			case r.UnitID == "}" && r.ReclaimCount == 0 && stuck.Add(1) == 1:
				<-ctx.Done() // abandoned, reclaimed by another worker, then aborted
				return worker.Result{Outcome: worker.Failed}
			}
			return passWith(ctx, r)
		})
		for _, err := range errs {
			if err != nil {
				require.ErrorIs(t, err, worker.ErrAborted)
			}
		}
		f.requireFinalizedOnce()
		require.Len(t, f.eventsOf(events.TypeRequeued), 1)
		require.Len(t, f.eventsOf(events.TypeReclaimed), 1)

		keys := written.of("hopper:{" + f.id + "}")
		want := slotOf(f.keys.Meta)
		badInputs.Add(int64(len(units) + len(cfgs))) // braced ids
		for _, k := range keys {
			assert.Equal(t, want, slotOf(k), "key %q is outside the build's slot", k)
		}
		for _, guard := range []string{"fence:worker:ci-{evil}-1", "fence:worker:}{", "fence:worker:{", "fence:priority-tail", "fence:units:"} {
			assert.True(t, hasKeyContaining(keys, guard), "no key %q was written: %v", guard, keys)
		}
		t.Logf("%d keys written, all in slot %d", len(keys), want)
	})

	t.Run("Transition on the caller's keys", func(t *testing.T) {
		for _, layout := range []string{"plain:%s:%s", "ref{%s}:%s"} {
			e := newEnv(t)
			id := redistest.BuildID(t)
			names := make([]string, 6)
			for i, k := range []string{"units", "units:priority", "attempts", "meta", "unit_state", "workers"} {
				names[i] = fmt.Sprintf(layout, id, k)
			}
			k, err := queue.ScriptKeys(names)
			require.NoError(t, err)
			// Keys of the caller's own are the caller's to grant, and so
			// are the guards of untagged ones, under "{<tag>}:".
			e.client, e.keys = clientFor(t, "~plain:*", "~ref{*", "~{*"), k
			e.publish([]string{"spec/{a}_spec.rb", "}{"}, map[string]string{"max_requeues": "1", "requeue_tolerance": "1"})
			for _, w := range []string{"ci-{7}", "{"} {
				x, ok := e.reserve(w)
				require.True(t, ok)
				e.transition("delivery_accounting", w, "600000", string(x.stream), x.id, x.unit)
				e.transition("heartbeat", w, "600000", string(x.stream), x.id, "1", x.unit)
				e.transition("requeue", w, "600000", string(x.stream), x.id, "1", x.unit, "file", "1", "1", "1")
			}
			time.Sleep(5 * time.Millisecond)
			x, ok := e.reserve("}{")
			require.True(t, ok)
			e.transition("delivery_accounting", "}{", "600000", string(x.stream), x.id, x.unit)
			time.Sleep(5 * time.Millisecond)
			assert.Equal(t, "OK", e.transition("reclaim", "x{y}", "600000", "1", "3")[0])
			// Untagged keys get guards under a tag chosen for their slot
			// ("{s123}:fence:..."): look for the prefix the queue derives.
			keys := written.of(id)
			if prefix := fence.SlotPrefix(names[0]); !strings.Contains(prefix, id) {
				keys = append(keys, written.of(prefix+"fence:")...)
			}
			want := slotOf(names[0])
			guards := 0
			for _, key := range keys {
				if strings.Contains(key, "fence:") {
					guards++
					assert.Equal(t, want, slotOf(key), "guard key %q is outside the slot of %s", key, names[0])
				}
			}
			assert.GreaterOrEqual(t, guards, 4, "guard keys written: %v", keys)
			badInputs.Add(6) // braced ids: two units, four workers
			t.Logf("layout %q: %d guard keys, all in slot %d", layout, guards, want)
		}
	})
}

func hasKeyContaining(keys []string, part string) bool {
	for _, k := range keys {
		if strings.Contains(k, part) {
			return true
		}
	}
	return false
}

// slotOracle starts a cluster-enabled Redis of its own (no slots assigned:
// only CLUSTER KEYSLOT is asked of it) and returns a client on it.
func slotOracle(t *testing.T) rueidis.Client {
	t.Helper()
	base := os.Getenv("HOPPER_REDIS_CMD") // a server matrix's, when set
	if strings.TrimSpace(base) == "" {
		base = `--save "" --appendonly no --protected-mode no --port 6379`
	}
	t.Setenv("HOPPER_REDIS_CMD", base+" --cluster-enabled yes")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := redistest.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Terminate(ctx); err != nil {
			t.Errorf("slot oracle: %v", err)
		}
	})
	// A cluster node without slots redirects key commands; only ask it
	// keyless ones, on a plain connection.
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// keyWrites collects the name of every key written on the package's server
// while a test runs, from keyspace notifications.
type keyWrites struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (w *keyWrites) of(part string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k := range w.keys {
		if strings.Contains(k, part) {
			out = append(out, k)
		}
	}
	return out
}

func watchWrites(t *testing.T) *keyWrites {
	t.Helper()
	admin := srv.AdminClient(t)
	ctx := t.Context()
	prev, err := admin.Do(ctx, admin.B().ConfigGet().Parameter("notify-keyspace-events").Build()).AsStrMap()
	require.NoError(t, err)
	require.NoError(t, admin.Do(ctx, admin.B().ConfigSet().ParameterValue().ParameterValue("notify-keyspace-events", "KEA").Build()).Error())
	w := &keyWrites{keys: map[string]bool{}}
	sub, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	require.NoError(t, err)
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	var once sync.Once
	go func() {
		done <- sub.Receive(rctx, sub.B().Psubscribe().Pattern("__keyevent@0__:*").Build(), func(m rueidis.PubSubMessage) {
			once.Do(func() { close(ready) })
			w.mu.Lock()
			w.keys[m.Message] = true
			w.mu.Unlock()
		})
	}()
	// Wait until the subscription sees writes.
	probe := "badinput-probe:" + redistest.BuildID(t)
	require.Eventually(t, func() bool {
		_ = admin.Do(ctx, admin.B().Set().Key(probe).Value("1").Px(time.Second).Build()).Error()
		select {
		case <-ready:
			return true
		default:
			return false
		}
	}, 10*time.Second, 20*time.Millisecond)
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("keyspace notifications: %v", err)
		}
		sub.Close()
		_ = admin.Do(context.Background(), admin.B().ConfigSet().ParameterValue().ParameterValue("notify-keyspace-events", prev["notify-keyspace-events"]).Build()).Error()
	})
	return w
}
