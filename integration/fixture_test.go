package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

const ttlMS = 600000

// env is one test's build: the client under test (the scripting-denied ACL
// user when HOPPER_TEST_ACL is set), an admin client for setup and
// inspection, and the build's keys.
type env struct {
	t      testing.TB
	ctx    context.Context
	client rueidis.Client
	admin  rueidis.Client
	keys   queue.Keys
	build  *queue.Build
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), client: srv.Client(t), admin: srv.AdminClient(t)}
	e.keys = queue.BuildKeys(redistest.BuildID(t))
	b, err := queue.OpenKeys(e.client, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	e.build = b
	return e
}

func (e *env) scriptKeys() []string {
	k := e.keys
	return []string{k.Units, k.Priority, k.Attempts, k.Meta, k.UnitState, k.Workers}
}

func (e *env) do(cmd ...string) rueidis.RedisResult {
	e.t.Helper()
	return e.admin.Do(e.ctx, e.admin.B().Arbitrary(cmd...).Build())
}

// publish lays the build out the way the reference publisher leaves it:
// both streams with group "workers" at 0, one entry per unit, zeroed
// unit_state, and meta with state=ready and the frozen budgets; and, as
// hopper's publisher does, meta's guarded mark, without which Transition
// refuses the build (queue.ErrUnguarded). The script reads no such field.
// unguarded takes the mark away.
func (e *env) publish(units []string, meta map[string]string) {
	e.t.Helper()
	k := e.keys
	for _, s := range []string{k.Units, k.Priority} {
		require.NoError(e.t, e.do("XGROUP", "CREATE", s, queue.Group, "0", "MKSTREAM").Error())
	}
	for _, u := range units {
		require.NoError(e.t, e.do("XADD", k.Units, "*", "id", u, "type", "file").Error())
		require.NoError(e.t, e.do("HSET", k.UnitState, u, `{"retry_index":0,"reclaim_count":0,"entered_retry":false}`).Error())
	}
	fields := map[string]string{
		"total_units": strconv.Itoa(len(units)), "unit_type": "file", "state": "ready",
		"ready_at": "1", "finalized_count": "0", "requeued_units_count": "0",
		"max_requeues": "0", "requeue_tolerance": "0", "max_reclaims": "3",
		"guarded": "1",
	}
	for f, v := range meta {
		fields[f] = v
	}
	args := []string{"HSET", k.Meta}
	for f, v := range fields {
		args = append(args, f, v)
	}
	require.NoError(e.t, e.do(args...).Error())
	for _, key := range e.scriptKeys() {
		require.NoError(e.t, e.do("PEXPIRE", key, strconv.Itoa(ttlMS)).Error())
	}
}

// unguarded removes meta's guarded mark: the build is then as the
// reference's publisher leaves it.
func (e *env) unguarded() {
	e.t.Helper()
	require.NoError(e.t, e.do("HDEL", e.keys.Meta, "guarded").Error())
}

// entry is one reserved stream entry.
type entry struct {
	stream queue.Stream
	id     string
	unit   string
	typ    string
}

// reserve reads one new entry for worker with a plain XREADGROUP, priority
// first, as the reference's workers do.
func (e *env) reserve(worker string) (entry, bool) {
	e.t.Helper()
	for _, s := range []queue.Stream{queue.StreamPriority, queue.StreamUnits} {
		key := e.keys.Units
		if s == queue.StreamPriority {
			key = e.keys.Priority
		}
		res, err := e.client.Do(e.ctx, e.client.B().Xreadgroup().Group(queue.Group, worker).Count(1).Streams().Key(key).Id(">").Build()).AsXRead()
		if rueidis.IsRedisNil(err) {
			continue
		}
		require.NoError(e.t, err)
		for _, entries := range res {
			if len(entries) > 0 {
				x := entries[0]
				return entry{stream: s, id: x.ID, unit: x.FieldValues["id"], typ: x.FieldValues["type"]}, true
			}
		}
	}
	return entry{}, false
}

// reservation reserves and accounts one entry for worker through the typed
// API.
func (e *env) reservation(worker string) queue.Reservation {
	e.t.Helper()
	x, ok := e.reserve(worker)
	require.True(e.t, ok, "nothing to reserve")
	d, err := e.build.AccountDelivery(e.ctx, worker, x.stream, x.id, x.unit)
	require.NoError(e.t, err)
	return queue.Reservation{
		WorkerID: worker, Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ,
		DeliveryCount: d.DeliveryCount, RetryIndex: d.RetryIndex, ReclaimCount: d.ReclaimCount,
	}
}

func (e *env) transition(argv ...string) []any {
	e.t.Helper()
	reply, err := queue.Transition(e.ctx, e.client, e.scriptKeys(), argv)
	require.NoError(e.t, err, "Transition %v", argv)
	return reply
}

// pendingRow is one row of the group's pending list.
type pendingRow struct {
	ID            string
	Consumer      string
	DeliveryCount int64
}

func (e *env) pending(stream string) []pendingRow {
	e.t.Helper()
	msgs, err := e.do("XPENDING", stream, queue.Group, "-", "+", "1000").ToArray()
	require.NoError(e.t, err)
	var rows []pendingRow
	for _, m := range msgs {
		f, _ := m.ToArray()
		id, _ := f[0].ToString()
		c, _ := f[1].ToString()
		n, _ := f[3].AsInt64()
		rows = append(rows, pendingRow{id, c, n})
	}
	return rows
}

func (e *env) hash(key string) map[string]string {
	e.t.Helper()
	m, err := e.do("HGETALL", key).AsStrMap()
	require.NoError(e.t, err)
	return m
}

// events returns the attempt log, decoded, in order.
func (e *env) events() []map[string]any {
	e.t.Helper()
	entries, err := e.do("XRANGE", e.keys.Attempts, "-", "+").AsXRange()
	require.NoError(e.t, err)
	out := make([]map[string]any, 0, len(entries))
	for _, x := range entries {
		var ev map[string]any
		require.NoError(e.t, json.Unmarshal([]byte(x.FieldValues["json"]), &ev), "event %s", x.FieldValues["json"])
		out = append(out, ev)
	}
	return out
}

// rawEvents returns the attempt log's JSON lines as stored.
func (e *env) rawEvents() []string {
	e.t.Helper()
	entries, err := e.do("XRANGE", e.keys.Attempts, "-", "+").AsXRange()
	require.NoError(e.t, err)
	out := make([]string, 0, len(entries))
	for _, x := range entries {
		out = append(out, x.FieldValues["json"])
	}
	return out
}

func (e *env) worker(id string) map[string]any {
	e.t.Helper()
	raw, err := e.do("HGET", e.keys.Workers, id).ToString()
	require.NoError(e.t, err)
	var rec map[string]any
	require.NoError(e.t, json.Unmarshal([]byte(raw), &rec))
	return rec
}

func (e *env) unitState(unit string) string {
	e.t.Helper()
	s, err := e.do("HGET", e.keys.UnitState, unit).ToString()
	require.NoError(e.t, err)
	return s
}

// requireTTLs checks that every live key that exists has a positive TTL no
// longer than the transitions' TTL.
func (e *env) requireTTLs() {
	e.t.Helper()
	for _, key := range e.scriptKeys() {
		ttl, err := e.do("PTTL", key).AsInt64()
		require.NoError(e.t, err)
		if ttl == -2 {
			continue
		}
		require.Greater(e.t, ttl, int64(0), "key %s has no TTL", key)
		require.LessOrEqual(e.t, ttl, int64(ttlMS), "key %s TTL", key)
	}
}

// requireNoChange runs f and checks that no live key of the build changed.
func (e *env) requireNoChange(f func()) {
	e.t.Helper()
	before := e.dump()
	f()
	require.Equal(e.t, before, e.dump(), "the build's state changed")
}

func (e *env) dump() map[string]string {
	out := map[string]string{}
	for _, key := range e.scriptKeys() {
		typ, err := e.do("TYPE", key).ToString()
		require.NoError(e.t, err)
		switch typ {
		case "stream":
			entries, err := e.do("XRANGE", key, "-", "+").AsXRange()
			require.NoError(e.t, err)
			out[key] = fmt.Sprint(entries)
			if key != e.keys.Attempts {
				out[key+" pending"] = fmt.Sprint(e.pending(key))
			}
		case "hash":
			m := e.hash(key)
			ks := make([]string, 0, len(m))
			for k := range m {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			for _, k := range ks {
				out[key+" "+k] = m[k]
			}
		case "none":
		default:
			out[key] = typ
		}
	}
	return out
}

func isNil(err error) bool { return rueidis.IsRedisNil(err) }
