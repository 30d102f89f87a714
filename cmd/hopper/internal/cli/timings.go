package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/timings"
	"github.com/redis/rueidis"
)

// timingsOff is the --timings value that keeps no timings.
const timingsOff = "off"

// timingsWait bounds loading or recording the suite's timings: they only
// order the build, never hold it up.
const timingsWait = 5 * time.Second

// timingsStore is where a suite's timings are kept between builds (see
// docs/design.md#timings).
type timingsStore interface {
	load(ctx context.Context) (timings.Table, error)
	// record writes recent over what the store holds; replaced is true when
	// what it held could not be read and was dropped.
	record(ctx context.Context, recent timings.Table) (replaced bool, err error)
	String() string
}

// timingsStoreFor picks the store of suite: none with --timings off, the
// file --timings names, else the suite's key on a shared Redis, else (the
// embedded server, gone with the process) a file in the user's cache dir.
// ok is false, with a warning to say so, when there is nowhere to keep them.
func (a *app) timingsStoreFor(o workOptions, client rueidis.Client, suite string, warn io.Writer) (timingsStore, bool) {
	switch {
	case o.Timings == timingsOff:
		return nil, false
	case o.Timings != "":
		return timingsFile(o.Timings), true
	case !o.embedded:
		return timingsKey{client: client, suite: suite}, true
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		fmt.Fprintf(warn, "%s: warning: no cache dir for the suite's timings (%v): units go in the given order; --timings FILE names a place\n", a.name, err)
		return nil, false
	}
	return timingsFile(filepath.Join(dir, "hopper", "timings", suite+".json")), true
}

// timingsFile keeps timings in a file, written whole through a rename.
type timingsFile string

func (f timingsFile) String() string { return string(f) }

func (f timingsFile) load(context.Context) (timings.Table, error) {
	b, err := os.ReadFile(string(f))
	if errors.Is(err, fs.ErrNotExist) {
		return timings.Table{}, nil
	}
	if err != nil {
		return nil, err
	}
	return timings.Decode(b)
}

func (f timingsFile) record(ctx context.Context, recent timings.Table) (bool, error) {
	old, err := f.load(ctx)
	replaced := err != nil
	if replaced {
		old = timings.Table{}
	}
	path := string(f)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return replaced, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".timings-*")
	if err != nil {
		return replaced, err
	}
	defer os.Remove(tmp.Name()) // gone once renamed; left only on failure
	_, werr := tmp.Write(timings.Merge(old, recent).Encode())
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return replaced, err
	}
	return replaced, os.Rename(tmp.Name(), path)
}

// timingsKey keeps timings in the suite's key on a shared Redis.
type timingsKey struct {
	client rueidis.Client
	suite  string
}

func (k timingsKey) String() string { return "Redis key " + queue.TimingsKey(k.suite) }

func (k timingsKey) load(ctx context.Context) (timings.Table, error) {
	return queue.LoadTimings(ctx, k.client, k.suite)
}

func (k timingsKey) record(ctx context.Context, recent timings.Table) (bool, error) {
	return queue.RecordTimings(ctx, k.client, k.suite, recent, 0)
}

// loadTimings reads the suite's timings from store (nil: none) and says
// how many of units they know. What cannot be read is a warning, and the
// units go in the given order.
func (a *app) loadTimings(store timingsStore, units []string, warn io.Writer) timings.Table {
	if store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(a.ctx, timingsWait)
	defer cancel()
	t, err := store.load(ctx)
	if err != nil {
		fmt.Fprintf(warn, "%s: warning: the suite's timings in %s cannot be read (%v): units go in the given order\n", a.name, store, err)
		return nil
	}
	known := 0
	for _, u := range units {
		if _, ok := t[u]; ok {
			known++
		}
	}
	if known > 0 {
		fmt.Fprintf(warn, "%s: %d of %d unit(s) timed by earlier builds (%s): longest first, new units ahead\n", a.name, known, len(units), store)
	}
	return t
}

// recordTimings writes what this process measured into store. A failure is
// a warning: the build's result does not depend on it.
func (a *app) recordTimings(store timingsStore, m *measurements, warn io.Writer) {
	recent := m.table()
	if store == nil || len(recent) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), timingsWait)
	defer cancel()
	replaced, err := store.record(ctx, recent)
	switch {
	case err != nil:
		fmt.Fprintf(warn, "%s: warning: the units' timings were not recorded in %s: %v\n", a.name, store, err)
	case replaced:
		fmt.Fprintf(warn, "%s: warning: %s held unreadable timings; replaced by this build's\n", a.name, store)
	}
}

// measurements gathers the durations the worker slots measured.
type measurements struct {
	mu sync.Mutex
	t  timings.Table
}

func (m *measurements) add(unit string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.t == nil {
		m.t = timings.Table{}
	}
	m.t[unit] = d
}

func (m *measurements) table() timings.Table {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}
