package integration

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ttl = "600000"

func dc(n int64) string { return strconv.FormatInt(n, 10) }

func TestDeliveryAccounting(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"./spec/a_spec.rb", "b"}, nil)
	x, ok := e.reserve("w1")
	require.True(t, ok)

	reply := e.transition("delivery_accounting", "w1", ttl, string(x.stream), x.id, x.unit)
	assert.Equal(t, []any{"OK", int64(1), int64(0), int64(0)}, reply)

	evs := e.events()
	require.Len(t, evs, 1)
	assert.Equal(t, []string{"type", "unit_id", "worker_id", "retry_index", "reclaim_count", "ownership_generation", "at_ms", "stream", "entry_id", "delivery_count"}, keyOrder(t, e.rawEvents()[0]))
	ev := evs[0]
	assert.Equal(t, "delivered", ev["type"])
	assert.Equal(t, "./spec/a_spec.rb", ev["unit_id"])
	assert.Equal(t, "w1", ev["worker_id"])
	assert.EqualValues(t, 1, ev["ownership_generation"])
	assert.Equal(t, "units", ev["stream"])
	assert.Equal(t, x.id, ev["entry_id"])
	assert.EqualValues(t, 1, ev["delivery_count"])
	assert.Greater(t, ev["at_ms"].(float64), float64(1.7e12))

	w := e.worker("w1")
	assert.Equal(t, "./spec/a_spec.rb", w["current_unit"])
	assert.EqualValues(t, 0, w["processed"])
	assert.Equal(t, ev["at_ms"], w["last_seen"])
	e.requireTTLs()

	// Accounting changes no ownership: the entry is still w1's, once delivered.
	assert.Equal(t, []pendingRow{{x.id, "w1", 1}}, e.pending(e.keys.Units))
}

// staleMode is one fenced mode, called through Transition (argv) and
// through the typed API (typed), for the entry, worker and delivery count
// of r.
type staleMode struct {
	argv  func(r queue.Reservation) []string
	typed func(e *env, r queue.Reservation) error
	// countFenced: the mode checks the delivery count as well as the owner.
	countFenced bool
}

var staleModes = map[string]staleMode{
	"delivery_accounting": {
		argv: func(r queue.Reservation) []string {
			return []string{"delivery_accounting", r.WorkerID, ttl, string(r.Stream), r.EntryID, r.UnitID}
		},
		typed: func(e *env, r queue.Reservation) error {
			_, err := e.build.AccountDelivery(e.ctx, r.WorkerID, r.Stream, r.EntryID, r.UnitID)
			return err
		},
	},
	"heartbeat": {
		argv: func(r queue.Reservation) []string {
			return []string{"heartbeat", r.WorkerID, ttl, string(r.Stream), r.EntryID, dc(r.DeliveryCount), r.UnitID}
		},
		typed:       func(e *env, r queue.Reservation) error { return e.build.Heartbeat(e.ctx, r) },
		countFenced: true,
	},
	"finalize": {
		argv: func(r queue.Reservation) []string {
			return []string{"finalize", r.WorkerID, ttl, string(r.Stream), r.EntryID, dc(r.DeliveryCount), r.UnitID, "passed", "12", "", ""}
		},
		typed: func(e *env, r queue.Reservation) error {
			return e.build.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 12})
		},
		countFenced: true,
	},
	"requeue": {
		argv: func(r queue.Reservation) []string {
			return []string{"requeue", r.WorkerID, ttl, string(r.Stream), r.EntryID, dc(r.DeliveryCount), r.UnitID, "file", "2", "1", "5", "boom", ""}
		},
		typed: func(e *env, r queue.Reservation) error {
			_, err := e.build.Requeue(e.ctx, r, queue.Result{DurationMS: 5, FailureSummary: "boom"}, queue.Budgets{MaxRequeues: 2, RequeueTolerance: 1})
			return err
		},
		countFenced: true,
	},
	"abandoned": {
		argv: func(r queue.Reservation) []string {
			return []string{"abandoned", r.WorkerID, ttl, string(r.Stream), r.EntryID, dc(r.DeliveryCount), r.UnitID, "900"}
		},
		typed:       func(e *env, r queue.Reservation) error { return e.build.Abandon(e.ctx, r, 900) },
		countFenced: true,
	},
}

func TestStaleCauses(t *testing.T) {
	// Every fenced mode refuses, with STALE (ErrStale from the typed API)
	// and no write, an entry that is not pending, owned by someone else, or
	// (all but delivery accounting, which is fenced by owner only) at
	// another delivery count.
	for name, m := range staleModes {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.publish([]string{"u1", "u2"}, map[string]string{"max_requeues": "2", "requeue_tolerance": "1"})
			x, _ := e.reserve("w1")
			e.transition("delivery_accounting", "w1", ttl, string(x.stream), x.id, x.unit)
			held := queue.Reservation{WorkerID: "w1", Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: "file", DeliveryCount: 1}
			entries, err := e.do("XRANGE", e.keys.Units, "-", "+").AsXRange()
			require.NoError(t, err)
			require.Len(t, entries, 2)
			require.Equal(t, "u2", entries[1].FieldValues["id"])

			otherOwner := held
			otherOwner.WorkerID = "w2"
			otherCount := held
			otherCount.DeliveryCount = 2
			neverDelivered := held
			neverDelivered.EntryID, neverDelivered.UnitID = entries[1].ID, "u2"
			absent := held
			absent.EntryID, absent.UnitID = "9999999999999-0", "u2"
			cases := map[string]queue.Reservation{
				"other owner":                  otherOwner,
				"entry never delivered":        neverDelivered,
				"entry absent from the stream": absent,
			}
			if m.countFenced {
				cases["other delivery count"] = otherCount
			}
			for cause, r := range cases {
				e.requireNothingWritten(func() {
					assert.Equal(t, []any{"STALE"}, e.transition(m.argv(r)...), "Transition, %s", cause)
				})
				e.requireNothingWritten(func() {
					err := m.typed(e, r)
					assert.ErrorIs(t, err, queue.ErrStale, "typed API, %s", cause)
				})
			}
			// And the owner at the right count is still accepted.
			reply := e.transition(m.argv(held)...)
			assert.NotEqual(t, "STALE", reply[0])
		})
	}
}

func TestDeliveryAccountingIgnoresDeliveryCount(t *testing.T) {
	// Accounting is fenced by owner only: an entry its owner has been
	// delivered twice is accounted, at delivery count 2.
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	x, _ := e.reserve("w1")
	require.NoError(t, e.do("XCLAIM", e.keys.Units, queue.Group, "w1", "0", x.id).Error())
	require.Equal(t, []pendingRow{{x.id, "w1", 2}}, e.pending(e.keys.Units))

	reply := e.transition("delivery_accounting", "w1", ttl, string(x.stream), x.id, x.unit)
	assert.Equal(t, []any{"OK", int64(2), int64(0), int64(0)}, reply)
	d, err := e.build.AccountDelivery(e.ctx, "w1", x.stream, x.id, x.unit)
	require.NoError(t, err)
	assert.Equal(t, queue.Delivery{DeliveryCount: 2}, d)
	evs := e.events()
	require.Len(t, evs, 2)
	for _, ev := range evs {
		assert.Equal(t, "delivered", ev["type"])
		assert.EqualValues(t, 2, ev["delivery_count"])
	}
}

// requireNothingWritten runs f and checks that it wrote nothing to e's
// build: no key (guard keys included) changed or appeared, and no TTL was
// renewed. Every key's TTL is first lowered to half the transitions' TTL,
// which a renewal would raise again.
func (e *env) requireNothingWritten(f func()) {
	e.t.Helper()
	const lowered = ttlMS / 2
	id := strings.TrimSuffix(strings.TrimPrefix(e.keys.Meta, "hopper:{"), "}:meta")
	l := &lifecycle{env: e, id: id}
	keys, err := e.do("KEYS", "hopper:{"+id+"}:*").AsStrSlice()
	require.NoError(e.t, err)
	require.NotEmpty(e.t, keys, "no keys under build %s", id)
	for _, key := range keys {
		require.NoError(e.t, e.do("PEXPIRE", key, strconv.Itoa(lowered)).Error())
	}
	before := l.snapshot()
	f()
	require.Equal(e.t, before, l.snapshot(), "the build's keys changed")
	for _, key := range keys {
		require.LessOrEqual(e.t, l.pttl(key), int64(lowered), "TTL of %s renewed", key)
	}
}

func TestCorruptCauses(t *testing.T) {
	// A meta holding a count alone is what a settlement's commit leaves
	// when meta vanished between its reads and its commit: the build's
	// state is as gone as with no meta at all.
	for _, tc := range []struct {
		name string
		stub map[string]string // meta's fields after the loss; empty: no meta
	}{
		{"meta missing", map[string]string{}},
		{"meta without its state", map[string]string{"finalized_count": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.publish([]string{"u1"}, nil)
			x, _ := e.reserve("w1")
			require.NoError(t, e.do("DEL", e.keys.Meta).Error())
			for f, v := range tc.stub {
				require.NoError(t, e.do("HSET", e.keys.Meta, f, v).Error())
			}
			for _, argv := range [][]string{
				{"delivery_accounting", "w1", ttl, string(x.stream), x.id, x.unit},
				{"heartbeat", "w1", ttl, string(x.stream), x.id, "1", x.unit},
				{"finalize", "w1", ttl, string(x.stream), x.id, "1", x.unit, "passed", "1"},
				{"requeue", "w1", ttl, string(x.stream), x.id, "1", x.unit, "file", "1", "1", "1"},
				{"abandoned", "w1", ttl, string(x.stream), x.id, "1", x.unit, "1"},
				{"reclaim", "w1", ttl, "0", "3"},
				{"liveness", "w1", ttl, ""},
				// Checked before the fence: a stranger's call is CORRUPT too.
				{"finalize", "nobody", ttl, string(x.stream), x.id, "7", x.unit, "passed", "1"},
			} {
				e.requireNothingWritten(func() {
					assert.Equal(t, []any{"CORRUPT"}, e.transition(argv...), "%v", argv)
				})
			}
			// Prebuilt events need no meta: a worker must be able to report that.
			assert.Equal(t, []any{"OK"}, e.transition("worker_error", "w1", ttl, `{"type":"worker_error","worker_id":"w1"}`))
			fields, err := e.do("HGETALL", e.keys.Meta).AsStrMap()
			require.NoError(t, err)
			assert.Equal(t, tc.stub, fields, "meta was written")
		})
	}
	t.Run("unit state missing", func(t *testing.T) {
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		x, _ := e.reserve("w1")
		require.NoError(t, e.do("HDEL", e.keys.UnitState, "u1").Error())
		for _, argv := range [][]string{
			{"delivery_accounting", "w1", ttl, string(x.stream), x.id, x.unit},
			{"finalize", "w1", ttl, string(x.stream), x.id, "1", x.unit, "passed", "1"},
			{"requeue", "w1", ttl, string(x.stream), x.id, "1", x.unit, "file", "1", "1", "1"},
			{"abandoned", "w1", ttl, string(x.stream), x.id, "1", x.unit, "1"},
			{"reclaim", "w2", ttl, "0", "3"}, // refused before ownership moves
		} {
			e.requireNothingWritten(func() {
				assert.Equal(t, []any{"CORRUPT"}, e.transition(argv...), "%v", argv)
			})
		}
		// The fence comes first: a stale caller hears STALE, not CORRUPT.
		assert.Equal(t, []any{"STALE"}, e.transition("finalize", "w2", ttl, string(x.stream), x.id, "1", x.unit, "passed", "1"))

		// The typed API refuses the same way, with ErrCorrupt.
		r := queue.Reservation{WorkerID: "w1", Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: "file", DeliveryCount: 1}
		for mode, call := range map[string]func() error{
			"AccountDelivery": func() error {
				_, err := e.build.AccountDelivery(e.ctx, r.WorkerID, r.Stream, r.EntryID, r.UnitID)
				return err
			},
			"Finalize": func() error { return e.build.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 1}) },
			"Requeue": func() error {
				_, err := e.build.Requeue(e.ctx, r, queue.Result{DurationMS: 1}, queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1})
				return err
			},
			"Abandon": func() error { return e.build.Abandon(e.ctx, r, 1) },
			"Reclaim": func() error {
				_, err := e.build.Reclaim(e.ctx, "w2", 0, 3)
				return err
			},
		} {
			e.requireNothingWritten(func() {
				assert.ErrorIs(t, call(), queue.ErrCorrupt, mode)
			})
		}
		stale := r
		stale.WorkerID = "w2"
		e.requireNothingWritten(func() {
			err := e.build.Finalize(e.ctx, stale, queue.Result{Outcome: "passed", DurationMS: 1})
			assert.ErrorIs(t, err, queue.ErrStale)
			assert.NotErrorIs(t, err, queue.ErrCorrupt)
		})
	})
	t.Run("unit state missing, reclaimer's record not JSON", func(t *testing.T) {
		// The missing state is found before the reclaimer's record is read.
		e := newEnv(t)
		e.publish([]string{"u1"}, nil)
		e.reserve("w1")
		require.NoError(t, e.do("HDEL", e.keys.UnitState, "u1").Error())
		require.NoError(t, e.do("HSET", e.keys.Workers, "w2", "not json").Error())
		e.requireNothingWritten(func() {
			assert.Equal(t, []any{"CORRUPT"}, e.transition("reclaim", "w2", ttl, "0", "3"))
		})
		e.requireNothingWritten(func() {
			_, err := e.build.Reclaim(e.ctx, "w2", 0, 3)
			assert.ErrorIs(t, err, queue.ErrCorrupt)
		})
		// With nothing idle, nothing reads the record: NONE.
		e.requireNothingWritten(func() {
			assert.Equal(t, []any{"NONE"}, e.transition("reclaim", "w2", ttl, "3600000", "3"))
		})
	})
}

func TestHeartbeat(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	r := e.reservation("w1")
	time.Sleep(30 * time.Millisecond)
	reply := e.transition("heartbeat", "w1", ttl, string(r.Stream), r.EntryID, "1", r.UnitID)
	assert.Equal(t, []any{"OK"}, reply)
	// Idle time starts over, the delivery count stays.
	msgs, err := e.do("XPENDING", e.keys.Units, queue.Group, "-", "+", "1").ToArray()
	require.NoError(t, err)
	row, _ := msgs[0].ToArray()
	idle, _ := row[2].AsInt64()
	count, _ := row[3].AsInt64()
	assert.Less(t, idle, int64(30))
	assert.EqualValues(t, 1, count)
	assert.Len(t, e.events(), 1, "a heartbeat appends no event")
	assert.Equal(t, "u1", e.worker("w1")["current_unit"])
	e.requireTTLs()
}

func TestFinalize(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, nil)
	r := e.reservation("w1")
	errs := `[{"example_id":"./a_spec.rb[1:1]","description":"a <b> & c","class":"RSpec::Expectations::ExpectationNotMetError","message":"expected 1","backtrace":["x.rb:1"]}]`
	reply := e.transition("finalize", "w1", ttl, string(r.Stream), r.EntryID, "1", r.UnitID, "failed", "1250", "test_failure", errs)
	assert.Equal(t, []any{"OK"}, reply)

	assert.Empty(t, e.pending(e.keys.Units))
	assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"])
	w := e.worker("w1")
	assert.Nil(t, w["current_unit"])
	assert.EqualValues(t, 1, w["processed"])
	raw := e.rawEvents()[1]
	assert.Equal(t, []string{"type", "unit_id", "worker_id", "retry_index", "reclaim_count", "ownership_generation", "at_ms", "outcome", "duration_ms", "reason", "errors", "stream", "entry_id"}, keyOrder(t, raw))
	assert.Contains(t, raw, `"description":"a <b> & c"`, "no HTML escaping")
	ev := e.events()[1]
	assert.Equal(t, "failed", ev["outcome"])
	assert.EqualValues(t, 1250, ev["duration_ms"])
	assert.Equal(t, "test_failure", ev["reason"])
	require.IsType(t, []any{}, ev["errors"], "errors embedded as JSON, not a string")

	// A second finalize of the same reservation is refused: exactly once.
	assert.Equal(t, []any{"STALE"}, e.transition("finalize", "w1", ttl, string(r.Stream), r.EntryID, "1", r.UnitID, "passed", "1"))
	assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"])

	// Passed, with no reason and no errors: both null.
	r2 := e.reservation("w1")
	require.NoError(t, e.build.Finalize(e.ctx, r2, queue.Result{Outcome: "passed", DurationMS: 3}))
	ev = e.events()[3]
	assert.Nil(t, ev["reason"])
	assert.Nil(t, ev["errors"])
	assert.Contains(t, ev, "reason")
	assert.EqualValues(t, 2, e.worker("w1")["processed"])
	e.requireTTLs()
}

func TestFinalizeRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	r := e.reservation("w1")
	e.requireNoChange(func() {
		_, err := queue.Transition(e.ctx, e.client, e.scriptKeys(), []string{"finalize", "w1", ttl, string(r.Stream), r.EntryID, "1", r.UnitID, "failed", "1", "test_failure", `[{"unclosed"`})
		require.ErrorIs(t, err, queue.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "JSON")
		_, err = queue.Transition(e.ctx, e.client, e.scriptKeys(), []string{"finalize", "w1", ttl, "units:other", r.EntryID, "1", r.UnitID, "passed", "1"})
		require.ErrorIs(t, err, queue.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "units:other")
		_, err = queue.Transition(e.ctx, e.client, e.scriptKeys(), []string{"finalize", "w1", ttl, string(r.Stream), r.EntryID, "one", r.UnitID, "passed", "1"})
		require.ErrorIs(t, err, queue.ErrInvalidArgument)
		_, err = queue.Transition(e.ctx, e.client, e.scriptKeys(), []string{"finalize", "w1", ttl, string(r.Stream), r.EntryID, "1"})
		require.ErrorIs(t, err, queue.ErrInvalidArgument)
		_, err = queue.Transition(e.ctx, e.client, e.scriptKeys(), []string{"finalize", "w1", "0", string(r.Stream), r.EntryID, "1", r.UnitID, "passed", "1"})
		require.ErrorIs(t, err, queue.ErrInvalidArgument)
		_, err = queue.Transition(e.ctx, e.client, e.scriptKeys(), []string{"teleport", "w1", ttl})
		require.EqualError(t, err, "ERR unknown transition mode teleport")
		require.ErrorIs(t, err, queue.ErrInvalidArgument)
		err = e.build.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: -1})
		require.ErrorIs(t, err, queue.ErrInvalidArgument)
	})
}

func TestRequeue(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, map[string]string{"max_requeues": "1", "requeue_tolerance": "1"})
	r := e.reservation("w1")
	reply := e.transition("requeue", "w1", ttl, string(r.Stream), r.EntryID, "1", r.UnitID, "file", "0", "0", "40", "1 failure", `[{"class":"E"}]`)
	// Meta's frozen budgets win over the caller's zeros.
	assert.Equal(t, []any{"REQUEUED", int64(1)}, reply)

	assert.Empty(t, e.pending(e.keys.Units))
	prio, err := e.do("XRANGE", e.keys.Priority, "-", "+").AsXRange()
	require.NoError(t, err)
	require.Len(t, prio, 1)
	assert.Equal(t, map[string]string{"id": "u1", "type": "file"}, prio[0].FieldValues)
	assert.Equal(t, `{"retry_index":1,"reclaim_count":0,"entered_retry":true}`, e.unitState("u1"))
	meta := e.hash(e.keys.Meta)
	assert.Equal(t, "1", meta["requeued_units_count"])
	assert.Equal(t, "0", meta["finalized_count"])
	raw := e.rawEvents()[1]
	assert.Equal(t, []string{"type", "unit_id", "worker_id", "retry_index", "reclaim_count", "ownership_generation", "at_ms", "previous_retry_index", "duration_ms", "failure_summary", "errors", "stream", "entry_id", "new_entry_id"}, keyOrder(t, raw))
	ev := e.events()[1]
	assert.Equal(t, "requeued", ev["type"])
	assert.Equal(t, prio[0].ID, ev["new_entry_id"], "the event names the new priority entry")
	assert.EqualValues(t, 1, ev["retry_index"])
	assert.EqualValues(t, 0, ev["previous_retry_index"])
	assert.EqualValues(t, 2, ev["ownership_generation"])
	assert.EqualValues(t, 1, e.worker("w1")["processed"])

	// Requeued work is served first; its second failure is over the cap.
	r2 := e.reservation("w2")
	assert.Equal(t, queue.StreamPriority, r2.Stream)
	assert.Equal(t, "u1", r2.UnitID)
	assert.EqualValues(t, 1, r2.RetryIndex)
	reply = e.transition("requeue", "w2", ttl, string(r2.Stream), r2.EntryID, "1", r2.UnitID, "file", "5", "1", "41", "again", "")
	assert.Equal(t, []any{"FINALIZED", int64(1)}, reply)
	raw = e.rawEvents()[3]
	assert.Equal(t, []string{"type", "unit_id", "worker_id", "retry_index", "reclaim_count", "ownership_generation", "at_ms", "outcome", "duration_ms", "reason", "errors", "stream", "entry_id", "failure_summary"}, keyOrder(t, raw))
	ev = e.events()[3]
	assert.Equal(t, "finalized", ev["type"])
	assert.Equal(t, "failed", ev["outcome"])
	assert.Equal(t, "retry_budget_exhausted", ev["reason"])
	assert.Equal(t, "again", ev["failure_summary"])
	assert.Equal(t, "units:priority", ev["stream"])
	assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"])
	assert.Empty(t, e.pending(e.keys.Priority))
	e.requireTTLs()
}

func TestRequeueTolerance(t *testing.T) {
	// 4 units, tolerance 0.5: two units may enter retry, a third may not,
	// while a unit already in retry is not stopped by the tolerance.
	e := newEnv(t)
	e.publish([]string{"u1", "u2", "u3", "u4"}, map[string]string{"max_requeues": "3", "requeue_tolerance": "0.5"})
	requeue := func(r queue.Reservation) []any {
		return e.transition("requeue", r.WorkerID, ttl, string(r.Stream), r.EntryID, dc(r.DeliveryCount), r.UnitID, "file", "3", "0.5", "1", "", "")
	}
	a, b, c := e.reservation("w1"), e.reservation("w1"), e.reservation("w1")
	assert.Equal(t, []any{"REQUEUED", int64(1)}, requeue(a))
	assert.Equal(t, []any{"REQUEUED", int64(1)}, requeue(b))
	assert.Equal(t, []any{"FINALIZED", int64(0)}, requeue(c))
	assert.Equal(t, "2", e.hash(e.keys.Meta)["requeued_units_count"])
	again := e.reservation("w1")
	assert.Equal(t, queue.StreamPriority, again.Stream)
	assert.Equal(t, []any{"REQUEUED", int64(2)}, requeue(again))
	assert.Equal(t, "2", e.hash(e.keys.Meta)["requeued_units_count"], "a unit is counted once")
}

func TestRequeueCapZero(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, map[string]string{"max_requeues": "0", "requeue_tolerance": "1"})
	r := e.reservation("w1")
	q, err := e.build.Requeue(e.ctx, r, queue.Result{DurationMS: 5, FailureSummary: "x"}, queue.Budgets{MaxRequeues: 9, RequeueTolerance: 1})
	require.NoError(t, err)
	assert.Equal(t, queue.Requeued{Requeued: false, RetryIndex: 0}, q)
	assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"])
}

func TestAbandoned(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	r := e.reservation("w1")
	assert.Equal(t, []any{"OK"}, e.transition("abandoned", "w1", ttl, string(r.Stream), r.EntryID, "1", r.UnitID, "900123"))
	raw := e.rawEvents()[1]
	assert.Equal(t, []string{"type", "unit_id", "worker_id", "retry_index", "reclaim_count", "ownership_generation", "at_ms", "elapsed_ms", "stream", "entry_id"}, keyOrder(t, raw))
	assert.EqualValues(t, 900123, e.events()[1]["elapsed_ms"])
	assert.Equal(t, "u1", e.worker("w1")["current_unit"], "abandon leaves the current unit")
	assert.Equal(t, []pendingRow{{r.EntryID, "w1", 1}}, e.pending(e.keys.Units), "the entry stays with its owner")
}

func TestLiveness(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	assert.Equal(t, []any{"OK"}, e.transition("liveness", "w9", ttl, ""))
	w := e.worker("w9")
	assert.Nil(t, w["current_unit"])
	assert.EqualValues(t, 0, w["processed"])
	assert.Equal(t, []any{"OK"}, e.transition("liveness", "w9", ttl, "u1"))
	assert.Equal(t, "u1", e.worker("w9")["current_unit"])
	assert.Empty(t, e.events(), "liveness appends no event")
	e.requireTTLs()
}

func TestPrebuiltEvents(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	stale := `{"type":"stale_rejected","unit_id":"u1","worker_id":"w1","retry_index":0,"reclaim_count":1,"ownership_generation":2,"operation":"finalize","stream":"units","entry_id":"1-0","delivery_count":1}`
	assert.Equal(t, []any{"OK"}, e.transition("stale_rejected", "w1", ttl, stale))
	assert.Equal(t, []any{"OK"}, e.transition("worker_error", "w1", ttl, "{}"))
	raw := e.rawEvents()
	require.Len(t, raw, 2)
	assert.Regexp(t, `^`+regexpQuote(stale[:len(stale)-1])+`,"at_ms":\d{13}}$`, raw[0], "the caller's bytes kept, at_ms appended")
	assert.Regexp(t, `^{"at_ms":\d{13}}$`, raw[1])
	e.requireNoChange(func() {
		for _, bad := range []string{`[1,2]`, `{"a":`, `"x"`, ``} {
			_, err := queue.Transition(e.ctx, e.client, e.scriptKeys(), []string{"worker_error", "w1", ttl, bad})
			require.ErrorIs(t, err, queue.ErrInvalidArgument, "payload %q", bad)
		}
	})
}

func TestReclaim(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, map[string]string{"max_reclaims": "1"})
	r := e.reservation("w1")
	e.reservation("w1") // u2, fresh: not idle

	assert.Equal(t, []any{"NONE"}, e.transition("reclaim", "w2", ttl, "60000", "3"), "nothing idle for a minute")
	time.Sleep(40 * time.Millisecond)
	reply := e.transition("reclaim", "w2", ttl, "20", "3")
	assert.Equal(t, []any{"OK", "units", r.EntryID, "u1", "file", int64(2), int64(0), int64(1)}, reply)
	assert.Equal(t, `{"retry_index":0,"reclaim_count":1,"entered_retry":false}`, e.unitState("u1"))
	rows := e.pending(e.keys.Units)
	assert.Equal(t, pendingRow{r.EntryID, "w2", 2}, rows[0])
	raw := e.rawEvents()[2]
	assert.Equal(t, []string{"type", "unit_id", "worker_id", "retry_index", "reclaim_count", "ownership_generation", "at_ms", "previous_worker_id", "stream", "entry_id", "delivery_count"}, keyOrder(t, raw))
	ev := e.events()[2]
	assert.Equal(t, "reclaimed", ev["type"])
	assert.Equal(t, "w1", ev["previous_worker_id"])
	assert.EqualValues(t, 2, ev["ownership_generation"])
	assert.Equal(t, "u1", e.worker("w2")["current_unit"])

	// The old owner is fenced out of every transition.
	for _, argv := range [][]string{
		{"heartbeat", "w1", ttl, "units", r.EntryID, "1", "u1"},
		{"finalize", "w1", ttl, "units", r.EntryID, "1", "u1", "passed", "1"},
		{"requeue", "w1", ttl, "units", r.EntryID, "1", "u1", "file", "1", "1", "1"},
		{"abandoned", "w1", ttl, "units", r.EntryID, "1", "u1", "1"},
	} {
		assert.Equal(t, []any{"STALE"}, e.transition(argv...), "%v", argv)
	}

	// Over the reclaim budget (meta: 1, caller: 3), the unit is finalized.
	time.Sleep(40 * time.Millisecond)
	reply = e.transition("reclaim", "w3", ttl, "20", "3")
	assert.Equal(t, []any{"FINALIZED", "u1"}, reply)
	raw = e.rawEvents()[3]
	assert.Equal(t, []string{"type", "unit_id", "worker_id", "retry_index", "reclaim_count", "ownership_generation", "at_ms", "outcome", "duration_ms", "reason", "errors", "stream", "entry_id", "previous_worker_id", "delivery_count"}, keyOrder(t, raw))
	ev = e.events()[3]
	assert.Equal(t, "reclaim_budget_exhausted", ev["reason"])
	assert.Equal(t, "w2", ev["previous_worker_id"])
	assert.EqualValues(t, 3, ev["delivery_count"])
	assert.EqualValues(t, 1, ev["reclaim_count"], "an exhausted reclaim does not count")
	assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"])
	w3 := e.worker("w3")
	assert.Nil(t, w3["current_unit"])
	assert.EqualValues(t, 0, w3["processed"])
	// u1 is settled; u2 is now the only idle entry.
	assert.Len(t, e.pending(e.keys.Units), 1)
	e.requireTTLs()
}

func TestReclaimPriorityFirst(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, map[string]string{"max_requeues": "2", "requeue_tolerance": "1"})
	plain := e.reservation("w1")
	r := e.reservation("w1")
	_, err := e.build.Requeue(e.ctx, r, queue.Result{DurationMS: 1}, queue.Budgets{})
	require.NoError(t, err)
	prio := e.reservation("w1")
	require.Equal(t, queue.StreamPriority, prio.Stream)
	// Idle long enough to be taken, while a just-reclaimed entry (idle ~0)
	// stays well below the timeout even on a loaded machine.
	const timeout = 300 * time.Millisecond
	time.Sleep(timeout + 50*time.Millisecond)
	rc, err := e.build.Reclaim(e.ctx, "w2", timeout, 3)
	require.NoError(t, err)
	assert.Equal(t, queue.ReclaimTaken, rc.Status)
	assert.Equal(t, queue.StreamPriority, rc.Reservation.Stream, "requeued work is reclaimed first")
	rc, err = e.build.Reclaim(e.ctx, "w2", timeout, 3)
	require.NoError(t, err)
	assert.Equal(t, plain.EntryID, rc.Reservation.EntryID)
	rc, err = e.build.Reclaim(e.ctx, "w2", timeout, 3)
	require.NoError(t, err)
	assert.Equal(t, queue.ReclaimNone, rc.Status)
}

func TestReclaimDeletedEntry(t *testing.T) {
	// As XAUTOCLAIM ... COUNT 1 walks a pending list: an entry deleted from
	// the stream is dropped from the pending list and ends the walk, idle or
	// not; nothing is claimed from that stream on this call.
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, nil)
	gone := e.reservation("w1")
	next := e.reservation("w1")
	require.NoError(t, e.do("XDEL", e.keys.Units, gone.EntryID).Error())
	time.Sleep(30 * time.Millisecond)
	rc, err := e.build.Reclaim(e.ctx, "w2", 10*time.Millisecond, 3)
	require.NoError(t, err)
	assert.Equal(t, queue.ReclaimNone, rc.Status)
	assert.Equal(t, []pendingRow{{next.EntryID, "w1", 1}}, e.pending(e.keys.Units), "the deleted entry dropped, the next left alone")

	rc, err = e.build.Reclaim(e.ctx, "w2", 10*time.Millisecond, 3)
	require.NoError(t, err)
	assert.Equal(t, queue.ReclaimTaken, rc.Status)
	assert.Equal(t, next.EntryID, rc.Reservation.EntryID)
	assert.Equal(t, "w1", rc.PreviousWorkerID)

	// A deleted entry is dropped even when nothing is idle yet.
	e2 := newEnv(t)
	e2.publish([]string{"u1"}, nil)
	r := e2.reservation("w1")
	require.NoError(t, e2.do("XDEL", e2.keys.Units, r.EntryID).Error())
	rc, err = e2.build.Reclaim(e2.ctx, "w2", time.Hour, 3)
	require.NoError(t, err)
	assert.Equal(t, queue.ReclaimNone, rc.Status)
	assert.Empty(t, e2.pending(e2.keys.Units))
}

func TestTypedErrorsAreSentinels(t *testing.T) {
	e := newEnv(t)
	_, err := e.build.Reclaim(e.ctx, "", time.Second, 1)
	require.ErrorIs(t, err, queue.ErrInvalidArgument)
	_, err = e.build.Reclaim(e.ctx, "w", -time.Second, 1)
	require.ErrorIs(t, err, queue.ErrInvalidArgument)
	err = e.build.Liveness(e.ctx, "w\xff", "")
	require.ErrorIs(t, err, queue.ErrInvalidArgument)
	assert.False(t, errors.Is(err, queue.ErrStale))
}
