package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
)

const ttl = 10 * time.Minute

// build is one test's build on the cluster: the client under test (the
// scripting-denied user when HOPPER_TEST_ACL is set), an admin client, and
// the build's queue.
type build struct {
	t      testing.TB
	ctx    context.Context
	id     string
	keys   queue.Keys
	client rueidis.Client
	admin  rueidis.Client
	q      *queue.Build
	meter  *sdkmetric.ManualReader
}

// newBuild opens build id (a fresh one when id is empty) with a client of
// its own.
func newBuild(t testing.TB, id string) *build {
	t.Helper()
	if id == "" {
		id = redistest.BuildID(t)
	}
	b := &build{t: t, ctx: t.Context(), id: id, keys: queue.BuildKeys(id),
		client: cl.Client(t), admin: cl.AdminClient(t), meter: sdkmetric.NewManualReader()}
	q, err := queue.Open(b.client, id, queue.Options{TTL: ttl,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(b.meter))})
	require.NoError(t, err)
	b.q = q
	return b
}

func (b *build) slot() int { return redistest.KeySlot(b.keys.Units) }

func (b *build) primary() string {
	b.t.Helper()
	p, err := cl.PrimaryOf(b.ctx, b.slot())
	require.NoError(b.t, err)
	return p
}

func (b *build) do(cmd ...string) rueidis.RedisResult {
	return b.admin.Do(b.ctx, b.admin.B().Arbitrary(cmd...).Build())
}

// publish lays the build out through TryLease and Publish.
func (b *build) publish(m queue.Manifest) {
	b.t.Helper()
	lease, won, err := b.q.TryLease(b.ctx, "publisher", 0)
	require.NoError(b.t, err)
	require.True(b.t, won)
	require.NoError(b.t, b.q.Publish(b.ctx, lease, m, time.Hour))
}

func manifestOf(units []string) queue.Manifest {
	return queue.Manifest{
		UnitIDs: units, UnitType: "package",
		Budgets:  queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1, MaxReclaims: 3},
		Timeout:  30 * time.Second,
		Revision: "abc123",
	}
}

func unitNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("./pkg/p%03d", i)
	}
	return out
}

// events returns the build's attempt log, decoded, in order.
func (b *build) events() []map[string]any {
	b.t.Helper()
	entries, err := b.do("XRANGE", b.keys.Attempts, "-", "+").AsXRange()
	require.NoError(b.t, err)
	out := make([]map[string]any, 0, len(entries))
	for _, x := range entries {
		var ev map[string]any
		require.NoError(b.t, json.Unmarshal([]byte(x.FieldValues["json"]), &ev), "event %s", x.FieldValues["json"])
		out = append(out, ev)
	}
	return out
}

// requireFinalizedOnce checks the invariant: exactly one finalized event per
// unit, none for anything else, finalized_count == total_units, nothing
// left pending. It returns how many events of each type the log holds.
func (b *build) requireFinalizedOnce(units []string) map[string]int {
	b.t.Helper()
	count := map[string]int{}
	types := map[string]int{}
	for _, ev := range b.events() {
		typ, _ := ev["type"].(string)
		types[typ]++
		if typ == events.TypeFinalized {
			unit, _ := ev["unit_id"].(string)
			count[unit]++
		}
	}
	want := map[string]int{}
	for _, u := range units {
		want[u] = 1
	}
	assert.Equal(b.t, want, count, "finalized events per unit of build %s", b.id)
	meta, err := b.do("HGETALL", b.keys.Meta).AsStrMap()
	require.NoError(b.t, err)
	assert.Equal(b.t, fmt.Sprint(len(units)), meta["total_units"], "total_units")
	assert.Equal(b.t, meta["total_units"], meta["finalized_count"], "finalized_count of build %s", b.id)
	for _, s := range []string{b.keys.Units, b.keys.Priority} {
		n, err := b.do("XPENDING", s, queue.Group).ToArray()
		require.NoError(b.t, err)
		pending, _ := n[0].AsInt64()
		assert.Zero(b.t, pending, "entries left pending in %s", s)
	}
	return types
}

// requireOnOneNode checks that every key of the build (guards, leader and
// tombstone included) is on the primary serving its slot, and in that slot.
func (b *build) requireOnOneNode() {
	b.t.Helper()
	primaries, err := cl.Primaries(b.ctx)
	require.NoError(b.t, err)
	home := b.primary()
	var found []string
	for _, p := range primaries {
		node := cl.NodeClient(b.t, p)
		keys, err := node.Do(b.ctx, node.B().Keys().Pattern("hopper:{"+b.id+"}*").Build()).AsStrSlice()
		require.NoError(b.t, err)
		if p != home {
			assert.Empty(b.t, keys, "keys of build %s on %s, not on its slot's primary %s", b.id, p, home)
			continue
		}
		found = keys
		for _, k := range keys {
			slot, err := node.Do(b.ctx, node.B().ClusterKeyslot().Key(k).Build()).AsInt64()
			require.NoError(b.t, err)
			assert.EqualValues(b.t, b.slot(), slot, "CLUSTER KEYSLOT %s", k)
		}
	}
	var guards int
	for _, k := range found {
		if !slices.Contains([]string{b.keys.Units, b.keys.Priority, b.keys.Attempts, b.keys.Meta,
			b.keys.UnitState, b.keys.Workers, b.keys.Leader, b.keys.Exists}, k) {
			guards++
		}
	}
	assert.NotEmpty(b.t, found, "no key of build %s on %s", b.id, home)
	b.t.Logf("build %s: slot %d on %s, %d keys (%d guards)", b.id, b.slot(), home, len(found), guards)
}

// retries returns the transaction retries and aborts this build's queue
// handle counted, by mode.
func (b *build) retries() (retries, aborts map[string]int64) {
	b.t.Helper()
	return countersOf(b.t, b.meter)
}

func countersOf(t testing.TB, r *sdkmetric.ManualReader) (retries, aborts map[string]int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	retries, aborts = map[string]int64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			data, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			var into map[string]int64
			switch m.Name {
			case "hopper.transaction.retries":
				into = retries
			case "hopper.transaction.aborts":
				into = aborts
			default:
				continue
			}
			for _, dp := range data.DataPoints {
				mode, _ := dp.Attributes.Value(attribute.Key("mode"))
				into[mode.AsString()] += dp.Value
			}
		}
	}
	return retries, aborts
}

// idsOnEveryPrimary returns n build ids per primary: builds whose slots are
// served by each of the cluster's primaries.
func idsOnEveryPrimary(t testing.TB, n int) map[string][]string {
	t.Helper()
	primaries, err := cl.Primaries(t.Context())
	require.NoError(t, err)
	out := map[string][]string{}
	for tries := 0; ; tries++ {
		require.Less(t, tries, 10000, "no spread of build ids found")
		id := redistest.BuildID(t)
		p, err := cl.PrimaryOf(t.Context(), redistest.KeySlot(queue.BuildKeys(id).Units))
		require.NoError(t, err)
		if len(out[p]) < n {
			out[p] = append(out[p], id)
		}
		done := true
		for _, q := range primaries {
			done = done && len(out[q]) == n
		}
		if done {
			return out
		}
	}
}

// fleet runs one build through worker.Run, as separate worker processes
// would: each worker with a client of its own.
type fleet struct {
	*build
	suite worker.Suite
	// timeout is the workers' Config.Timeout: how long a unit's owner may
	// be silent, and how long a heartbeat may fail, before others take over.
	timeout time.Duration
	mu      sync.Mutex
	log     strings.Builder
}

func newFleet(t testing.TB, id string, units []string) *fleet {
	return &fleet{build: newBuild(t, id), suite: worker.Suite{Units: units, UnitType: "package", Command: "go test {unit}"},
		timeout: 3 * time.Second}
}

func (f *fleet) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log.Write(p)
}

func (f *fleet) config(id string) worker.Config {
	return worker.Config{
		BuildID: f.id, WorkerID: id,
		Timeout: f.timeout, MaxUnitDuration: 20 * time.Second,
		MaxRequeues: 1, RequeueTolerance: 1,
		TTL: ttl, TombstoneTTL: time.Hour, InitTimeout: 20 * time.Second,
		Block: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		Output: f, Log: f,
	}
}

// running is a fleet's workers at work.
type running struct {
	done chan struct{} // closed once every worker has returned
	errs []error       // each worker's error, set before done is closed
}

// start runs n workers in the background.
func (f *fleet) start(ctx context.Context, n int, fn worker.Func) *running {
	run := &running{done: make(chan struct{}), errs: make([]error, n)}
	var wg sync.WaitGroup
	for i := range n {
		client := cl.Client(f.t)
		cfg := f.config(fmt.Sprintf("ci-%d", i+1))
		wg.Go(func() { run.errs[i] = worker.Run(ctx, client, f.suite, cfg, fn) })
	}
	go func() { wg.Wait(); close(run.done) }()
	return run
}

// waitFinalized waits until at least n units are finalized. It fails the
// test when the workers all return first.
func (f *fleet) waitFinalized(ctx context.Context, run *running, n int64) {
	f.t.Helper()
	for {
		p, err := f.q.Progress(ctx)
		if err == nil && p.Finalized >= n {
			return
		}
		select {
		case <-ctx.Done():
			f.t.Fatalf("waiting for %d units finalized: %v (last progress %+v, %v)", n, ctx.Err(), p, err)
		case <-run.done:
			f.t.Fatalf("the workers returned %v before %d units were finalized (progress %+v, %v)", run.errs, n, p, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// report runs the report on the build with a client under test and checks
// it says what the units did.
func (f *fleet) report(wantVerdict report.Verdict) *report.Report {
	f.t.Helper()
	r, err := report.Run(f.ctx, cl.Client(f.t), f.id, report.Options{
		PollInterval: 20 * time.Millisecond, InitTimeout: 5 * time.Second, Timeout: 20 * time.Second,
	})
	require.NoError(f.t, err)
	assert.Equal(f.t, wantVerdict, r.Verdict, r.Headline)
	b, err := r.Summary().JSON()
	require.NoError(f.t, err)
	var s map[string]any
	require.NoError(f.t, json.Unmarshal(b, &s))
	assert.EqualValues(f.t, len(f.suite.Units), s["total_units"])
	assert.EqualValues(f.t, len(f.suite.Units), s["finalized_count"])
	return r
}

// flakyFunc passes every unit after a short random sleep, except that the
// units flaky says fail their first attempt (and pass on the retry).
func flakyFunc(sleep time.Duration, flaky func(unit string) bool) worker.Func {
	return func(ctx context.Context, r queue.Reservation) worker.Result {
		d := sleep/2 + rand.N(sleep)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return worker.Result{Outcome: worker.Failed}
		}
		if r.RetryIndex == 0 && flaky != nil && flaky(r.UnitID) {
			return worker.Result{Outcome: worker.Failed, Errors: []events.ErrorEntry{{
				ExampleID: r.UnitID + "/TestX", Description: "TestX", Class: "FAIL", Message: "flaked",
			}}, Output: []byte("FAIL " + r.UnitID + "\n")}
		}
		return worker.Result{Outcome: worker.Passed, Output: []byte("ok " + r.UnitID + "\n")}
	}
}

// everyNth marks one unit in n as flaky.
func everyNth(n int) func(string) bool {
	return func(unit string) bool {
		var h int
		for _, c := range unit {
			h = h*31 + int(c)
		}
		return h%n == 0
	}
}

// requireWorkersOK waits for the workers: every one must end well.
func requireWorkersOK(t testing.TB, run *running) {
	t.Helper()
	<-run.done
	var failed []string
	for _, err := range run.errs {
		if err != nil {
			failed = append(failed, err.Error())
		}
	}
	sort.Strings(failed)
	require.Empty(t, failed, "workers that failed")
}
