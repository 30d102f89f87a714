package integration

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/fingerprint"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTryLease(t *testing.T) {
	l := newLifecycle(t)
	lease, won, err := l.build.TryLease(l.ctx, "ci-1", 0)
	require.NoError(t, err)
	require.True(t, won)
	assert.Regexp(t, `^ci-1:[0-9a-f]{16}$`, lease.Token)
	assert.Equal(t, "ci-1", lease.WorkerID())
	got, err := l.do("GET", l.keys.Leader).ToString()
	require.NoError(t, err)
	assert.Equal(t, lease.Token, got)
	ttl := l.pttl(l.keys.Leader)
	assert.InDelta(t, 60000, ttl, 2000, "SET NX EX 60")

	l.requireUnchanged(func() {
		_, won, err := l.open().TryLease(l.ctx, "ci-2", 0)
		require.NoError(t, err)
		assert.False(t, won, "a second worker took a held lease")
	})
}

func TestPublishLaysOutTheBuild(t *testing.T) {
	l := newLifecycle(t)
	units := []string{"./spec/a_spec.rb", "{weird} unit", "./b", "ünïcode"}
	m := manifestOf(units...)
	m.TotalExamples, m.Seed = 42, "1234"
	lease, won, err := l.build.TryLease(l.ctx, "ci-1", 0)
	require.NoError(t, err)
	require.True(t, won)

	before := time.Now()
	require.NoError(t, l.build.Publish(l.ctx, lease, m, time.Hour))

	// The units stream holds the units in order, with the default type.
	entries, err := l.do("XRANGE", l.keys.Units, "-", "+").AsXRange()
	require.NoError(t, err)
	var got []string
	for _, x := range entries {
		got = append(got, x.FieldValues["id"])
		assert.Equal(t, "file", x.FieldValues["type"])
		assert.Len(t, x.FieldValues, 2)
	}
	assert.Equal(t, units, got)
	// Both streams have the group at 0; the priority stream is empty.
	for _, s := range []string{l.keys.Units, l.keys.Priority} {
		groups, err := l.do("XINFO", "GROUPS", s).ToArray()
		require.NoError(t, err, s)
		require.Len(t, groups, 1, s)
		g, err := groups[0].AsMap()
		require.NoError(t, err)
		nameMsg, lastMsg := g["name"], g["last-delivered-id"]
		name, _ := nameMsg.ToString()
		last, _ := lastMsg.ToString()
		assert.Equal(t, "workers", name)
		assert.Equal(t, "0-0", last)
	}
	n, err := l.do("XLEN", l.keys.Priority).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n)
	// Zeroed unit states.
	for _, u := range units {
		assert.Equal(t, `{"retry_index":0,"reclaim_count":0,"entered_retry":false}`, l.unitState(u))
	}
	// Meta: the manifest, the budgets, state and counters.
	meta := l.hash(l.keys.Meta)
	readyAt, err := strconv.ParseInt(meta["ready_at"], 10, 64)
	require.NoError(t, err)
	assert.InDelta(t, before.UnixMilli(), readyAt, 5000, "ready_at is the server's TIME in ms")
	fp := fingerprint.Of(fingerprint.Inputs{UnitIDs: units, UnitType: "file", Revision: "abc123"})
	inputs, _ := json.Marshal(fp.Inputs)
	for field, want := range map[string]string{
		"state": "ready", "finalized_count": "0", "requeued_units_count": "0",
		"total_units": "4", "total_examples": "42", "unit_type": "file",
		"unit_ids":    `["./spec/a_spec.rb","{weird} unit","./b","ünïcode"]`,
		"load_errors": `[]`, "seed": "1234", "revision": "abc123",
		"fingerprint": fp.Sum, "fingerprint_inputs": string(inputs),
		"max_requeues": "2", "requeue_tolerance": "0.5", "max_reclaims": "3",
		"timeout": "30", "ttl": "600", "publisher": lease.Token, "guarded": "1",
	} {
		assert.Equal(t, want, meta[field], "meta field %s", field)
	}
	// The tombstone, and a TTL on every live key.
	tomb, err := l.do("GET", l.keys.Exists).ToString()
	require.NoError(t, err)
	assert.Equal(t, "1", tomb)
	assert.InDelta(t, time.Hour.Milliseconds(), l.pttl(l.keys.Exists), 5000)
	for _, key := range []string{l.keys.Units, l.keys.Priority, l.keys.Meta, l.keys.UnitState} {
		ttl := l.pttl(key)
		assert.Greater(t, ttl, int64(ttlMS-5000), key)
		assert.LessOrEqual(t, ttl, int64(ttlMS), key)
	}

	// Status reads the same manifest back.
	s, err := l.open().Status(l.ctx)
	require.NoError(t, err)
	assert.True(t, s.Published)
	assert.True(t, s.Tombstone)
	assert.Equal(t, queue.StateReady, s.State)
	assert.Equal(t, readyAt, s.ReadyAtMS)
	assert.Equal(t, lease.Token, s.Publisher)
	want := m
	want.UnitType, want.Fingerprint, want.TTL = "file", fp, ttlMS*time.Millisecond
	assert.True(t, want.Equal(s.Manifest), "Status manifest\n got %+v\nwant %+v", s.Manifest, want)
}

func TestPublishFailureMode(t *testing.T) {
	l := newLifecycle(t)
	m := manifestOf("a", "b")
	m.LoadErrors = []string{"spec/x_spec.rb: syntax error", "spec/y_spec.rb: cannot load <z>"}
	lease, _, err := l.build.TryLease(l.ctx, "ci-1", 0)
	require.NoError(t, err)
	require.NoError(t, l.build.Publish(l.ctx, lease, m, 0))

	meta := l.hash(l.keys.Meta)
	assert.Equal(t, "init_failed", meta["state"])
	assert.NotEmpty(t, meta["ready_at"])
	assert.Equal(t, `["spec/x_spec.rb: syntax error","spec/y_spec.rb: cannot load <z>"]`, meta["load_errors"])
	assert.NotContains(t, meta, "finalized_count")
	for _, key := range []string{l.keys.Units, l.keys.Priority, l.keys.UnitState} {
		assert.False(t, l.exists(key), "%s exists in failure mode", key)
	}
	assert.True(t, l.exists(l.keys.Exists))
	assert.InDelta(t, queue.DefaultTombstoneTTL.Milliseconds(), l.pttl(l.keys.Exists), 5000)
	assert.Greater(t, l.pttl(l.keys.Meta), int64(0))

	s, err := l.build.Status(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.StateInitFailed, s.State)
	assert.Equal(t, m.LoadErrors, s.Manifest.LoadErrors)
}

// Each refusal is checked in the order docs/design.md#publish gives, and
// writes nothing.
func TestPublishRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(l *lifecycle, lease queue.Lease)
		want  error
	}{
		{"no lease at all", func(l *lifecycle, lease queue.Lease) {
			require.NoError(t, l.do("DEL", l.keys.Leader).Error())
		}, queue.ErrLeaseLost},
		{"another worker's lease", func(l *lifecycle, lease queue.Lease) {
			require.NoError(t, l.do("SET", l.keys.Leader, "ci-2:0123456789abcdef").Error())
		}, queue.ErrLeaseLost},
		{"lease lost beats the tombstone", func(l *lifecycle, lease queue.Lease) {
			require.NoError(t, l.do("SET", l.keys.Leader, "ci-2:0123456789abcdef").Error())
			require.NoError(t, l.do("SET", l.keys.Exists, "1", "PX", "600000").Error())
		}, queue.ErrLeaseLost},
		{"tombstone: published before", func(l *lifecycle, lease queue.Lease) {
			require.NoError(t, l.do("SET", l.keys.Exists, "1", "PX", "600000").Error())
		}, queue.ErrBuildBurnt},
		{"tombstone beats meta", func(l *lifecycle, lease queue.Lease) {
			require.NoError(t, l.do("SET", l.keys.Exists, "1", "PX", "600000").Error())
			require.NoError(t, l.do("HSET", l.keys.Meta, "state", "ready").Error())
		}, queue.ErrBuildBurnt},
		{"meta: already published", func(l *lifecycle, lease queue.Lease) {
			require.NoError(t, l.do("HSET", l.keys.Meta, "state", "ready", "total_units", "0").Error())
		}, queue.ErrAlreadyPublished},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLifecycle(t)
			lease, won, err := l.build.TryLease(l.ctx, "ci-1", 0)
			require.NoError(t, err)
			require.True(t, won)
			tt.setup(l, lease)
			l.requireUnchanged(func() {
				err := l.build.Publish(l.ctx, lease, manifestOf("a", "b"), 0)
				require.ErrorIs(t, err, tt.want)
			})
		})
	}
}

// A second publish with the same lease finds its own tombstone.
func TestPublishTwice(t *testing.T) {
	l := newLifecycle(t)
	lease, _, err := l.build.TryLease(l.ctx, "ci-1", 0)
	require.NoError(t, err)
	require.NoError(t, l.build.Publish(l.ctx, lease, manifestOf("a"), 0))
	l.requireUnchanged(func() {
		require.ErrorIs(t, l.build.Publish(l.ctx, lease, manifestOf("a"), 0), queue.ErrBuildBurnt)
	})
}

// Bad input is refused before anything is sent, naming the bad value.
func TestPublishValidation(t *testing.T) {
	long := strings.Repeat("x", queue.MaxIDBytes+1)
	tests := []struct {
		name   string
		modify func(*queue.Manifest)
		lease  string
		want   string
	}{
		{"empty unit id", func(m *queue.Manifest) { m.UnitIDs = []string{"a", ""} }, "", "unit id #2 is empty"},
		{"duplicate unit id", func(m *queue.Manifest) { m.UnitIDs = []string{"a", "b", "a"} }, "", `unit id #3 "a" repeats unit id #1`},
		{"oversized unit id", func(m *queue.Manifest) { m.UnitIDs = []string{long} }, "", "unit id #1 is 1025 bytes, over 1024"},
		{"non-UTF-8 unit id", func(m *queue.Manifest) { m.UnitIDs = []string{"ok", "bad\xff"} }, "", `unit id #2 "bad\xff" is not valid UTF-8`},
		{"negative max requeues", func(m *queue.Manifest) { m.Budgets.MaxRequeues = -1 }, "", "max requeues -1 is negative"},
		{"tolerance above 1", func(m *queue.Manifest) { m.Budgets.RequeueTolerance = 1.5 }, "", "requeue tolerance 1.5 is not between 0 and 1"},
		{"negative max reclaims", func(m *queue.Manifest) { m.Budgets.MaxReclaims = -2 }, "", "max reclaims -2 is negative"},
		// Meta's counts are read back as at most MaxInt32: a larger cap,
		// once published, would make every joiner find the build corrupt.
		{"max requeues over MaxInt32", func(m *queue.Manifest) { m.Budgets.MaxRequeues = 1 << 40 }, "", "max requeues 1099511627776 is over 2147483647"},
		{"max reclaims over MaxInt32", func(m *queue.Manifest) { m.Budgets.MaxReclaims = math.MaxInt32 + 1 }, "", "max reclaims 2147483648 is over 2147483647"},
		{"negative timeout", func(m *queue.Manifest) { m.Timeout = -time.Second }, "", "timeout -1s is below one millisecond"},
		{"negative total examples", func(m *queue.Manifest) { m.TotalExamples = -3 }, "", "total examples -3 is negative"},
		{"fingerprint of other units", func(m *queue.Manifest) {
			m.Fingerprint = fingerprint.Of(fingerprint.Inputs{UnitIDs: []string{"zzz"}, UnitType: "file", Revision: "abc123"})
		}, "", "fingerprint's unit_ids digest"},
		{"malformed lease token", func(*queue.Manifest) {}, "ci-1", `lease token "ci-1" is not <worker_id>:<16 hex digits>`},
		{"uppercase lease token", func(*queue.Manifest) {}, "ci-1:0123456789ABCDEF", "16 lowercase hex digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLifecycle(t)
			lease, _, err := l.build.TryLease(l.ctx, "ci-1", 0)
			require.NoError(t, err)
			if tt.lease != "" {
				lease = queue.Lease{Token: tt.lease}
			}
			m := manifestOf("a", "b")
			tt.modify(&m)
			l.requireUnchanged(func() {
				err := l.build.Publish(l.ctx, lease, m, 0)
				require.ErrorIs(t, err, queue.ErrInvalidArgument)
				assert.Contains(t, err.Error(), tt.want)
			})
		})
	}
}

// A build of zero units is published ready; it is complete at once.
func TestPublishEmptyBuild(t *testing.T) {
	l := newLifecycle(t)
	lease, _, err := l.build.TryLease(l.ctx, "ci-1", 0)
	require.NoError(t, err)
	require.NoError(t, l.build.Publish(l.ctx, lease, manifestOf(), 0))
	p, err := l.build.Progress(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Progress{Finalized: 0, Total: 0}, p)
	assert.True(t, p.Complete())
	_, ok, err := l.build.Reserve(l.ctx, "ci-1", queue.ReserveOptions{Block: time.Millisecond})
	require.NoError(t, err)
	assert.False(t, ok)
}

// A large suite is published in the same one transaction (its unit states
// written in several HSETs), in order.
func TestPublishLargeSuite(t *testing.T) {
	l := newLifecycle(t)
	ids := make([]string, 5000)
	for i := range ids {
		ids[i] = "./spec/models/m" + strconv.Itoa(i) + "_spec.rb"
	}
	start := time.Now()
	j, err := l.build.Join(l.ctx, "ci-1", manifestOf(ids...), fastJoin)
	require.NoError(t, err)
	t.Logf("published %d units in %v", len(ids), time.Since(start))
	require.True(t, j.Published)
	assert.Equal(t, ids, j.Manifest.UnitIDs)
	n, err := l.do("XLEN", l.keys.Units).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, len(ids), n)
	n, err = l.do("HLEN", l.keys.UnitState).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, len(ids), n)
	first, err := l.do("XRANGE", l.keys.Units, "-", "+", "COUNT", "1").AsXRange()
	require.NoError(t, err)
	assert.Equal(t, ids[0], first[0].FieldValues["id"])
	last, err := l.do("XREVRANGE", l.keys.Units, "+", "-", "COUNT", "1").AsXRange()
	require.NoError(t, err)
	assert.Equal(t, ids[len(ids)-1], last[0].FieldValues["id"])
}

// A build opened on the reference script's six keys has no lease or
// tombstone key: its publisher is the script's caller, not this package.
func TestLifecycleNeedsBuildKeys(t *testing.T) {
	l := newLifecycle(t)
	b, err := queue.OpenKeys(l.client, mustScriptKeys(t, l.scriptKeys()), queue.Options{})
	require.NoError(t, err)
	_, _, err = b.TryLease(l.ctx, "ci-1", 0)
	require.ErrorIs(t, err, queue.ErrInvalidArgument)
	_, err = b.Join(l.ctx, "ci-1", manifestOf("a"), fastJoin)
	require.ErrorIs(t, err, queue.ErrInvalidArgument)
	_, err = b.Status(l.ctx)
	require.ErrorIs(t, err, queue.ErrInvalidArgument)
}

func mustScriptKeys(t *testing.T, keys []string) queue.Keys {
	t.Helper()
	k, err := queue.ScriptKeys(keys)
	require.NoError(t, err)
	return k
}

// The largest budgets a manifest takes are published and read back as they
// were given.
func TestPublishLargestBudgets(t *testing.T) {
	l := newLifecycle(t)
	m := manifestOf("a", "b")
	m.Budgets.MaxRequeues, m.Budgets.MaxReclaims = math.MaxInt32, math.MaxInt32
	j, err := l.build.Join(l.ctx, "ci-1", m, fastJoin)
	require.NoError(t, err)
	assert.Equal(t, m.Budgets, j.Manifest.Budgets)
}

// Timeout and TTL are written into meta as decimal seconds and read back as
// the durations given, to the nanosecond, the largest included.
func TestPublishDurationsReadBack(t *testing.T) {
	// 1h8m16.000567847s prints as 4096.000567847, which a cut read gives
	// back 1ns short. Long enough a TTL for the build to outlive the test.
	for _, d := range []time.Duration{4096000567847 * time.Nanosecond, math.MaxInt64} {
		t.Run(d.String(), func(t *testing.T) {
			l := newLifecycle(t)
			m := manifestOf("a", "b")
			m.Timeout, m.TTL = d, d
			j, err := l.build.Join(l.ctx, "ci-1", m, fastJoin)
			require.NoError(t, err)
			assert.Equal(t, d, j.Manifest.Timeout, "timeout")
			assert.Equal(t, d, j.Manifest.TTL, "TTL")
		})
	}
}

// A unit_state key that is not a hash (left by something else under the
// build's name) would fail its HSET inside the publish transaction, while
// the rest applied: a ready build without its unit states. It is refused
// before anything is written.
func TestPublishRefusesUnitStateOfAnotherType(t *testing.T) {
	l := newLifecycle(t)
	lease, won, err := l.build.TryLease(l.ctx, "ci-1", 0)
	require.NoError(t, err)
	require.True(t, won)
	require.NoError(t, l.do("SET", l.keys.UnitState, "not a hash").Error())
	l.requireUnchanged(func() {
		err := l.build.Publish(l.ctx, lease, manifestOf("a", "b"), 0)
		require.ErrorIs(t, err, queue.ErrCorrupt)
		assert.Contains(t, err.Error(), l.keys.UnitState+" holds a string, not a hash")
	})
}
