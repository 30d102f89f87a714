package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/require"
)

// lifecycle is one test's build seen from outside: no fixture lays it out,
// the code under test publishes it.
type lifecycle struct {
	*env
	id string
}

func newLifecycle(t testing.TB) *lifecycle {
	t.Helper()
	e := &env{t: t, ctx: t.Context(), client: srv.Client(t), admin: srv.AdminClient(t)}
	id := redistest.BuildID(t)
	e.keys = queue.BuildKeys(id)
	b, err := queue.Open(e.client, id, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	e.build = b
	return &lifecycle{env: e, id: id}
}

// open returns another handle on the same build, as another process would
// hold.
func (l *lifecycle) open() *queue.Build {
	l.t.Helper()
	b, err := queue.Open(srv.Client(l.t), l.id, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(l.t, err)
	return b
}

// snapshot returns every key of the build (guard keys, leader and tombstone
// included) with its type and content, and whether it has a TTL: what
// "nothing was written" compares.
func (l *lifecycle) snapshot() map[string]string {
	l.t.Helper()
	keys, err := l.admin.Do(l.ctx, l.admin.B().Keys().Pattern("hopper:{"+l.id+"}:*").Build()).AsStrSlice()
	require.NoError(l.t, err)
	sort.Strings(keys)
	out := map[string]string{}
	for _, key := range keys {
		typ, err := l.do("TYPE", key).ToString()
		require.NoError(l.t, err)
		pttl, err := l.do("PTTL", key).AsInt64()
		require.NoError(l.t, err)
		var content string
		switch typ {
		case "string":
			content, _ = l.do("GET", key).ToString()
		case "hash":
			m := l.hash(key)
			fields := make([]string, 0, len(m))
			for f, v := range m {
				fields = append(fields, f+"="+v)
			}
			sort.Strings(fields)
			content = strings.Join(fields, "\n")
		case "stream":
			entries, err := l.do("XRANGE", key, "-", "+").AsXRange()
			require.NoError(l.t, err)
			content = fmt.Sprint(entries)
			if !strings.HasSuffix(key, ":attempts") {
				content += fmt.Sprint(l.pending(key))
			}
		}
		out[key] = fmt.Sprintf("%s ttl:%v %s", typ, pttl > 0, content)
	}
	return out
}

// requireUnchanged runs f and checks that no key of the build changed.
func (l *lifecycle) requireUnchanged(f func()) {
	l.t.Helper()
	before := l.snapshot()
	f()
	require.Equal(l.t, before, l.snapshot(), "the build's keys changed")
}

// exists reports whether key exists.
func (l *lifecycle) exists(key string) bool {
	l.t.Helper()
	n, err := l.do("EXISTS", key).AsInt64()
	require.NoError(l.t, err)
	return n == 1
}

func (l *lifecycle) pttl(key string) int64 {
	l.t.Helper()
	n, err := l.do("PTTL", key).AsInt64()
	require.NoError(l.t, err)
	return n
}

// manifest is a small valid manifest over units.
func manifestOf(units ...string) queue.Manifest {
	return queue.Manifest{
		UnitIDs:  units,
		Budgets:  queue.Budgets{MaxRequeues: 2, RequeueTolerance: 0.5, MaxReclaims: 3},
		Timeout:  30 * time.Second,
		Revision: "abc123",
	}
}
