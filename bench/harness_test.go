package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The two sides of the comparison.
const (
	sideOurs   = "ours"
	sideScript = "script"
)

// config is the harness's environment (see the package comment).
type config struct {
	units   int
	workers []int
	rounds  int
	script  string // path of the reference script; "" when unset
	ctx     string // the workers' context: "cancel", "deadline" or "background"
	api     string // our side's API: apiTyped or apiTransition (compat_test.go)
}

func loadConfig() (config, error) {
	cfg := config{units: 2000, workers: []int{1, 8, 32, 128}, rounds: 3, script: os.Getenv("HOPPER_REFERENCE_SCRIPT"), ctx: "cancel"}
	var err error
	if cfg.api, err = loadAPI(); err != nil {
		return cfg, err
	}
	switch v := os.Getenv("HOPPER_BENCH_CTX"); v {
	case "":
	case "cancel", "deadline", "background":
		cfg.ctx = v
	default:
		return cfg, fmt.Errorf("HOPPER_BENCH_CTX=%q: want cancel, deadline or background", v)
	}
	if v := os.Getenv("HOPPER_BENCH_UNITS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			return cfg, fmt.Errorf("HOPPER_BENCH_UNITS=%q: want an integer of at least 10", v)
		}
		cfg.units = n
	}
	if v := os.Getenv("HOPPER_BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("HOPPER_BENCH_ROUNDS=%q: want a positive integer", v)
		}
		cfg.rounds = n
	}
	if v := os.Getenv("HOPPER_BENCH_WORKERS"); v != "" {
		cfg.workers = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return cfg, fmt.Errorf("HOPPER_BENCH_WORKERS=%q: want positive integers separated by commas", v)
			}
			cfg.workers = append(cfg.workers, n)
		}
	}
	return cfg, nil
}

// env is the harness's connections to the one server: admin for setup and
// statistics, one client for our side and one for the script's. Each side's
// workers all share its one client: ours takes a pooled dedicated
// connection per transaction (WATCH ... EXEC), the script's EVALSHA calls
// are auto-pipelined on the client's shared connection, each the way rueidis
// runs it by default; both read with XREADGROUP on the shared connection.
type env struct {
	admin, ours, script rueidis.Client
	sha                 string
	api                 string // our side's API (config.api)
	// global reads the global MeterProvider, which the Builds that
	// Transition keeps report to: their counters run across drains.
	global *sdkmetric.ManualReader
}

// workerContext is the context the workers pass to every call. Its shape
// matters to rueidis: a context that can be cancelled but has no deadline
// (a worker's usual signal.NotifyContext) switches a connection to its
// background pipeline for good, and a dedicated connection in that mode
// sends UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE and DISCARD, one more
// blocking round trip, each time it goes back to the pool.
func workerContext(parent context.Context, kind string) (context.Context, context.CancelFunc) {
	switch kind {
	case "deadline":
		return context.WithTimeout(parent, time.Hour)
	case "background":
		return context.WithoutCancel(parent), func() {}
	}
	return context.WithCancel(parent)
}

// openSide opens build b on one side. wrap (may be nil) wraps the side's
// client; mp (may be nil: no-op) receives our side's metrics. It returns the
// side, the client its workers read with, and a function that releases it.
func (e *env) openSide(name string, b *build, wrap func(rueidis.Client) rueidis.Client, mp metric.MeterProvider) (side, rueidis.Client, func(), error) {
	c := e.ours
	if name == sideScript {
		c = e.script
	}
	if wrap != nil {
		c = wrap(c)
	}
	switch {
	case name == sideScript:
		return scriptSide(c, e.sha, b.scriptKeys()), c, func() {}, nil
	case e.api == apiTransition:
		return transitionSide(c, b.scriptKeys()), c, func() {}, nil
	}
	qb, err := queue.Open(c, b.id, queue.Options{TTL: ttl, MeterProvider: mp})
	if err != nil {
		return nil, nil, nil, err
	}
	return typedSide(qb), c, func() {}, nil
}

// warmUnits is the size of the unmeasured build each round drains first.
const warmUnits = 200

// warm drains an unmeasured build of warmUnits units with n workers on the
// side, then flushes it, so that the measured build is never the first the
// side's client, connections and runtime see at this worker count: the
// connections it opens, the goroutines' stacks, the heap. Both sides get
// the same. (Holding n dedicated connections at once, as this did before
// transitions were batched, made ours open connections it never uses,
// and its first round at each worker count ran up to 60% slower than the
// next two.)
func (e *env) warm(ctx context.Context, name string, n int) error {
	b, err := publish(ctx, e.admin, "bench-warm-"+name, warmUnits)
	if err != nil {
		return err
	}
	s, client, closeSide, err := e.openSide(name, b, nil, nil)
	if err != nil {
		return err
	}
	defer closeSide()
	errs := make(chan error, n)
	for i := range n {
		w := newWorker(fmt.Sprintf("w%03d", i), warmUnits)
		go func() { errs <- w.drain(ctx, client, b, s, nil) }()
	}
	for range n {
		if err := <-errs; err != nil {
			return fmt.Errorf("warming %s: %w", name, err)
		}
	}
	if err := b.check(ctx, e.admin); err != nil {
		return fmt.Errorf("warming %s: %w", name, err)
	}
	return e.admin.Do(ctx, e.admin.B().Flushall().Build()).Error()
}

// run is one timed drain of one build.
type run struct {
	side    string
	workers int
	elapsed time.Duration
	modes   [nModes]int64 // transitions by mode
	lat     [nModes][]time.Duration
	stats   map[string]cmdStat
	cpu     float64 // server seconds, user + sys
	client  float64 // this process's seconds, user + sys: workers and library together
	mallocs uint64
	otel    otelCounts
}

// processCPU is the CPU time this process has used, user and system, in
// seconds: with the server's, it tells where a transition's cost goes on a
// machine the clients and the server share.
func processCPU() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9
}

func (r *run) transitions() int64 {
	var n int64
	for _, c := range r.modes {
		n += c
	}
	return n
}

// lastSettled is when the last of workers' settlements returned: the
// build was drained then.
func lastSettled(workers []*worker) time.Time {
	var last time.Time
	for _, w := range workers {
		if w.settled.After(last) {
			last = w.settled
		}
	}
	return last
}

// drainBuild publishes a build, drains it with n workers on one side, and
// measures: wall time to the last settlement, per-transition latency, INFO commandstats (after
// CONFIG RESETSTAT) and INFO cpu deltas, client mallocs, and our side's
// OpenTelemetry counters through a ManualReader.
func (e *env) drainBuild(ctx context.Context, cfg config, name string, n int, id string) (*run, error) {
	units := cfg.units
	if err := e.admin.Do(ctx, e.admin.B().Flushall().Build()).Error(); err != nil {
		return nil, err
	}
	if err := e.warm(ctx, name, n); err != nil {
		return nil, err
	}
	b, err := publish(ctx, e.admin, id, units)
	if err != nil {
		return nil, err
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	s, client, closeSide, err := e.openSide(name, b, nil, mp)
	if err != nil {
		return nil, err
	}
	defer closeSide()
	var otel0 otelCounts
	if e.global != nil {
		if otel0, err = collectOTel(ctx, e.global); err != nil {
			return nil, err
		}
		reader = e.global
	}

	want := b.expected()
	capacity := int(want[modeAccount])/n + 16
	workers := make([]*worker, n)
	for i := range workers {
		workers[i] = newWorker(fmt.Sprintf("w%03d", i), capacity)
	}
	runtime.GC()
	if err := e.admin.Do(ctx, e.admin.B().ConfigResetstat().Build()).Error(); err != nil {
		return nil, err
	}
	cpu0, err := serverCPU(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	client0 := processCPU()

	dctx, cancel := workerContext(ctx, cfg.ctx)
	defer cancel()
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := w.drain(dctx, client, b, s, nil); err != nil {
				errs <- fmt.Errorf("%s %s: %w", name, w.id, err)
				cancel() // a no-op for HOPPER_BENCH_CTX=background
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	elapsed := lastSettled(workers).Sub(t0)
	client1 := processCPU()
	runtime.ReadMemStats(&m1)
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}

	r := &run{side: name, workers: n, elapsed: elapsed, client: client1 - client0, mallocs: m1.Mallocs - m0.Mallocs}
	cpu1, err := serverCPU(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	r.cpu = cpu1 - cpu0
	if r.stats, err = commandStats(ctx, e.admin); err != nil {
		return nil, err
	}
	for _, w := range workers {
		for m := range nModes {
			r.modes[m] += int64(len(w.lat[m]))
			r.lat[m] = append(r.lat[m], w.lat[m]...)
		}
	}
	if r.modes != want {
		return nil, fmt.Errorf("%s: transitions by mode %v, want %v", name, r.modes, want)
	}
	if err := b.check(ctx, e.admin); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if name == sideOurs {
		if r.otel, err = collectOTel(ctx, reader); err != nil {
			return nil, err
		}
		r.otel = r.otel.since(otel0)
		if r.otel.transitions != r.transitions() || r.otel.notOK != 0 {
			return nil, fmt.Errorf("hopper.transitions counted %d (%d not OK nor REQUEUED), want %d all OK",
				r.otel.transitions, r.otel.notOK, r.transitions())
		}
	}
	return r, nil
}

// otelCounts are our side's counters as the queue reports them.
type otelCounts struct {
	transitions, notOK int64
	aborts, retries    int64
	abortsByMode       map[string]int64
}

// since is c less the counts of c0, taken earlier from the same reader.
func (c otelCounts) since(c0 otelCounts) otelCounts {
	c.transitions -= c0.transitions
	c.notOK -= c0.notOK
	c.aborts -= c0.aborts
	c.retries -= c0.retries
	for m, v := range c0.abortsByMode {
		c.abortsByMode[m] -= v
	}
	return c
}

func collectOTel(ctx context.Context, reader *sdkmetric.ManualReader) (otelCounts, error) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return otelCounts{}, err
	}
	oc := otelCounts{abortsByMode: map[string]int64{}}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				mode, _ := dp.Attributes.Value(attribute.Key("mode"))
				switch m.Name {
				case "hopper.transitions":
					st, _ := dp.Attributes.Value(attribute.Key("status"))
					if mode.AsString() == queue.ModeReclaim && st.AsString() == queue.StatusNone {
						continue // the typed side's reservations look for idle entries, and find none
					}
					oc.transitions += dp.Value
					if st.AsString() != queue.StatusOK && st.AsString() != queue.StatusRequeued {
						oc.notOK += dp.Value
					}
				case "hopper.transaction.aborts":
					oc.aborts += dp.Value
					oc.abortsByMode[mode.AsString()] += dp.Value
				case "hopper.transaction.retries":
					oc.retries += dp.Value
				}
			}
		}
	}
	return oc, nil
}

// TestBench is the harness: `make bench`. For each worker count it drains
// builds alternately through our side and the script's (ours, script, ours,
// script, ...), then prints the table.
func TestBench(t *testing.T) {
	if os.Getenv("HOPPER_BENCH") == "" {
		t.Skip("the benchmark harness runs with HOPPER_BENCH=1 (make bench)")
	}
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := &env{admin: srv.AdminClient(t), ours: srv.Client(t), script: srv.AdminClient(t), api: cfg.api}
	if cfg.api == apiTransition {
		e.global = sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.global))
		otel.SetMeterProvider(mp)
		defer func() { _ = mp.Shutdown(context.Background()) }()
	}
	// Both sides talk to the container on the bridge network unless
	// HOPPER_BENCH_NET=mapped: the mapped port goes through docker-proxy,
	// which doubles the socket work of every round trip.
	rep0 := "mapped port (docker-proxy)"
	if os.Getenv("HOPPER_BENCH_NET") != "mapped" {
		if addr, err := srv.BridgeAddr(ctx); err == nil {
			e.ours, e.script = srv.ClientAt(t, addr, false, oursAutoPipelining()...), srv.ClientAt(t, addr, true)
			rep0 = "bridge network " + addr + " (no docker-proxy)"
			if os.Getenv("HOPPER_BENCH_AUTOPIPE") == "off" {
				rep0 += "; ours with DisableAutoPipelining"
			}
		} else {
			t.Logf("bridge address unavailable (%v): using the mapped port", err)
		}
	}
	sides := []string{sideOurs}
	if cfg.script != "" {
		src, err := os.ReadFile(cfg.script)
		if err != nil {
			t.Fatalf("reading the reference script: %v", err)
		}
		if e.sha, err = e.admin.Do(ctx, e.admin.B().ScriptLoad().Script(string(src)).Build()).ToString(); err != nil {
			t.Fatalf("SCRIPT LOAD %s: %v", cfg.script, err)
		}
		sides = append(sides, sideScript)
	}
	rep := &report{cfg: cfg, sides: sides, started: time.Now(), runs: map[runKey][]*run{}, network: rep0}
	rep.load[0] = loadAvg()
	if rep.redisVersion, err = redisVersion(ctx, e.admin); err != nil {
		t.Fatal(err)
	}

	// Round trips per transition, and which commands run nested: one
	// worker, a small build, a counting client. Not timed.
	rep.wire = map[string]wireProfile{}
	for _, s := range sides {
		p, err := measureWire(ctx, e, cfg, s, min(cfg.units, 200))
		if err != nil {
			t.Fatal(err)
		}
		rep.wire[s] = p
	}
	if rep.other, err = measureOtherModes(ctx, e); err != nil {
		t.Fatal(err)
	}
	if rep.floor, err = measureFloor(ctx, e); err != nil {
		t.Fatal(err)
	}

	for _, n := range cfg.workers {
		for round := range cfg.rounds {
			for _, s := range sides {
				r, err := e.drainBuild(ctx, cfg, s, n, fmt.Sprintf("bench-%s-w%d-r%d", s, n, round))
				if err != nil {
					t.Fatalf("%d workers, round %d: %v", n, round+1, err)
				}
				k := runKey{s, n}
				rep.runs[k] = append(rep.runs[k], r)
				t.Logf("%-6s %3d workers round %d: %d transitions in %v", s, n, round+1, r.transitions(), r.elapsed.Round(time.Millisecond))
			}
		}
	}
	if err := e.admin.Do(ctx, e.admin.B().Flushall().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	rep.load[1] = loadAvg()
	rep.print(os.Stdout)
}

func redisVersion(ctx context.Context, c rueidis.Client) (string, error) {
	info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return "", err
	}
	f := parseInfoFields(info)
	v := f["redis_version"]
	if s := f["server_name"]; s != "" { // valkey says so
		v = s + " " + v
	}
	return v, nil
}

// oursAutoPipelining is how hopper's client is tuned: as rueidis sets it
// up, or, with HOPPER_BENCH_AUTOPIPE=off, with DisableAutoPipelining, so
// that its plain commands (the workload's reads) each take a pooled
// connection instead of sharing the pipelined one. Its transactions run on
// dedicated connections either way.
func oursAutoPipelining() []func(*rueidis.ClientOption) {
	if os.Getenv("HOPPER_BENCH_AUTOPIPE") != "off" {
		return nil
	}
	return []func(*rueidis.ClientOption){func(o *rueidis.ClientOption) { o.DisableAutoPipelining = true }}
}
