package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleet is one test's build run by workers through the worker runtime.
type fleet struct {
	*lifecycle
	suite worker.Suite
	log   lockedBuffer // every worker's own lines
	out   lockedBuffer // the output of the attempts that count
}

func newFleet(t *testing.T, units ...string) *fleet {
	t.Helper()
	return &fleet{lifecycle: newLifecycle(t), suite: worker.Suite{Units: units, UnitType: "package", Command: "go test {unit}"}}
}

// config is a worker's Config scaled for tests: seconds, not minutes.
func (f *fleet) config(id string) worker.Config {
	return worker.Config{
		BuildID: f.id, WorkerID: id,
		Timeout: 2 * time.Second, MaxUnitDuration: 10 * time.Second,
		TTL: 10 * time.Minute, TombstoneTTL: time.Hour, InitTimeout: 10 * time.Second,
		Block: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		Output: &f.out, Log: &f.log,
	}
}

// start runs one worker in the background, with its own client as its own
// process would; the returned channel yields Run's error.
func (f *fleet) start(ctx context.Context, cfg worker.Config, fn worker.Func) <-chan error {
	client := srv.Client(f.t)
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, client, f.suite, cfg, fn) }()
	return done
}

// run runs the workers of cfgs together until all return, and returns
// their errors in order.
func (f *fleet) run(cfgs []worker.Config, fn worker.Func) []error {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	var chans []<-chan error
	for _, c := range cfgs {
		chans = append(chans, f.start(ctx, c, fn))
	}
	errs := make([]error, len(chans))
	for i, ch := range chans {
		errs[i] = <-ch
	}
	return errs
}

// workers returns n configs ci-1..ci-n, each modified by mod.
func (f *fleet) workers(n int, mod func(*worker.Config)) []worker.Config {
	var out []worker.Config
	for i := 1; i <= n; i++ {
		c := f.config("ci-" + string(rune('0'+i)))
		if mod != nil {
			mod(&c)
		}
		out = append(out, c)
	}
	return out
}

// report reads the build's report, as the report command would after the
// workers are done.
func (f *fleet) report() *report.Report {
	f.t.Helper()
	r, err := report.Run(f.ctx, srv.Client(f.t), f.id, report.Options{
		PollInterval: 20 * time.Millisecond, InitTimeout: 5 * time.Second, Timeout: 10 * time.Second,
	})
	require.NoError(f.t, err)
	return r
}

// summary is the report's JSON summary, decoded.
func (f *fleet) summary(r *report.Report) map[string]any {
	f.t.Helper()
	b, err := r.Summary().JSON()
	require.NoError(f.t, err)
	var s map[string]any
	require.NoError(f.t, json.Unmarshal(b, &s))
	return s
}

// junitCase is one <testcase> of the report's JUnit file.
type junitCase struct {
	Name    string `xml:"name,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Error     *struct{} `xml:"error"`
	SystemOut string    `xml:"system-out"`
}

func (f *fleet) junit(r *report.Report) map[string]junitCase {
	f.t.Helper()
	b, err := r.JUnit()
	require.NoError(f.t, err)
	var doc struct {
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(f.t, xml.Unmarshal(b, &doc))
	require.Len(f.t, doc.Suites, 1)
	out := map[string]junitCase{}
	for _, c := range doc.Suites[0].Cases {
		out[c.Name] = c
	}
	return out
}

// requireFinalizedOnce checks the invariant: exactly one finalized event per
// unit of the suite, and none for anything else.
func (f *fleet) requireFinalizedOnce() {
	f.t.Helper()
	count := map[string]int{}
	for _, ev := range f.events() {
		if ev["type"] == events.TypeFinalized {
			count[ev["unit_id"].(string)]++
		}
	}
	want := map[string]int{}
	for _, u := range f.suite.Units {
		want[u] = 1
	}
	assert.Equal(f.t, want, count, "finalized events per unit")
	p, err := f.build.Progress(f.ctx)
	require.NoError(f.t, err)
	assert.EqualValues(f.t, len(f.suite.Units), p.Finalized)
}

// eventsOf returns the log's events of type typ.
func (f *fleet) eventsOf(typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range f.events() {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

// lockedBuffer is a bytes.Buffer many workers may write at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
