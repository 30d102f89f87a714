package integration

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// Redis reads 01-0 and 1-00 as the entry 1-0 in XPENDING, XACK and
// XCLAIM, but hopper names an entry's guard after the id as the caller
// spells it. Worker a holds an entry; r's reclaim has read it, watching
// the entry's guard, and waits at its commit; a then settles the entry
// under another spelling. Had that settlement gone through, it would have
// written another guard than the one r watches, and r's commit would have
// applied after it. Every other spelling is refused, before anything is
// sent: r commits alone, and the unit is settled once.

// aliasFinalize holds r's reclaim (budget spent: it finalizes the unit) at
// its commit while a finalizes its entry as alias(entry id) through
// settle; it returns settle's error once r has committed.
func aliasFinalize(t *testing.T, alias func(string) string, settle func(e *env, r queue.Reservation) error) {
	e := newEnv(t)
	e.publish([]string{"u1"}, map[string]string{"max_reclaims": "0"})
	held := e.reservation("a")
	commit := reclaimAtCommit(t, e, "r")

	aliased := held
	aliased.EntryID = alias(held.EntryID)
	serr := settle(e, aliased)
	got, rerr := commit()

	assert.Equal(t, 1, countEvents(e, "finalized", "u1"), "finalized events of u1")
	assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"])
	assert.Empty(t, e.pending(e.keys.Units))
	require.NoError(t, rerr)
	assert.Equal(t, queue.ReclaimFinalized, got.Status, "r's reclaim finalizes the unit, its budget spent")
	require.ErrorIs(t, serr, queue.ErrInvalidArgument, "a's settlement under %q", aliased.EntryID)
	assert.Contains(t, serr.Error(), fmt.Sprintf("%q", aliased.EntryID), "the error names the id")
}

func TestAliasedEntryIDFinalize(t *testing.T) {
	leadingZero := func(id string) string { return "0" + id }
	t.Run("Transition", func(t *testing.T) {
		aliasFinalize(t, leadingZero, func(e *env, r queue.Reservation) error {
			_, err := queue.Transition(e.ctx, e.client, e.scriptKeys(),
				[]string{"finalize", "a", "600000", string(r.Stream), r.EntryID, "1", r.UnitID, "passed", "5", "", ""})
			return err
		})
	})
	t.Run("typed API", func(t *testing.T) {
		aliasFinalize(t, leadingZero, func(e *env, r queue.Reservation) error {
			return e.build.Finalize(e.ctx, r, queue.Result{Outcome: events.OutcomePassed, DurationMS: 5})
		})
	})
}

// A requeue under 1-00 against a reclaim that still has budget: had it
// gone through, r's commit would have written the unit's state back over
// the requeue's (entered_retry false, reclaim_count 1) and claimed an
// entry already acknowledged, with the unit back on the priority stream
// as well.
func TestAliasedEntryIDRequeue(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, map[string]string{"max_requeues": "1", "requeue_tolerance": "1", "max_reclaims": "3"})
	x, ok := e.reserve("a")
	require.True(t, ok)
	e.transition("delivery_accounting", "a", "600000", "units", x.id, x.unit)
	commit := reclaimAtCommit(t, e, "r")

	ms, seq, _ := strings.Cut(x.id, "-")
	alias := ms + "-0" + seq
	_, qerr := queue.Transition(e.ctx, e.client, e.scriptKeys(),
		[]string{"requeue", "a", "600000", "units", alias, "1", x.unit, "file", "1", "1", "5", "boom", ""})
	got, rerr := commit()

	// The state r's commit wrote is the log's: one reclaim, no requeue.
	assert.Equal(t, 0, countEvents(e, "requeued", x.unit), "requeued events")
	assert.Equal(t, 1, countEvents(e, "reclaimed", x.unit), "reclaimed events")
	assert.Equal(t, `{"retry_index":0,"reclaim_count":1,"entered_retry":false}`, e.unitState(x.unit))
	require.NoError(t, rerr)
	require.Equal(t, queue.ReclaimTaken, got.Status)
	require.ErrorIs(t, qerr, queue.ErrInvalidArgument, "a's requeue under %q", alias)
	assert.Contains(t, qerr.Error(), fmt.Sprintf("%q", alias))
	assert.Equal(t, "0", e.hash(e.keys.Meta)["requeued_units_count"])
	assert.Empty(t, e.pending(e.keys.Priority), "nothing put back on the priority stream")
	n, err := e.do("XLEN", e.keys.Priority).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "priority entries")
	assert.Equal(t, []pendingRow{{x.id, "r", 2}}, e.pending(e.keys.Units), "the entry is r's")
	// a, told so, settles under the id as Redis writes it: too late.
	assert.Equal(t, []any{"STALE"}, e.transition("requeue", "a", "600000", "units", x.id, "1", x.unit, "file", "1", "1", "5", "boom", ""))
}

// reclaimAtCommit starts worker's reclaim of e's build (timeout 0) on a
// Build of its own, and returns once the reclaim has made its reads and
// waits at its commit; commit lets it through and returns its outcome.
func reclaimAtCommit(t *testing.T, e *env, worker string) (commit func() (queue.Reclaimed, error)) {
	t.Helper()
	gate := newCommitGate(t)
	rb, err := queue.OpenKeys(gate.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	gate.armed.Store(true)
	var got queue.Reclaimed
	var rerr error
	done := make(chan struct{})
	go func() { defer close(done); got, rerr = rb.Reclaim(e.ctx, worker, 0, 0) }()
	require.True(t, gate.waitHeld(t, done), "%s's reclaim reaches its commit", worker)
	return func() (queue.Reclaimed, error) {
		gate.open()
		<-done
		return got, rerr
	}
}

// countEvents counts the attempt log's events of type typ for unit.
func countEvents(e *env, typ, unit string) int {
	n := 0
	for _, ev := range e.events() {
		if ev["type"] == typ && ev["unit_id"] == unit {
			n++
		}
	}
	return n
}

// A fenced transition that names another unit than the one its entry
// carries is refused with ErrInvalidArgument, naming both, and writes
// nothing; the reference, which reads no entry field, would act on the
// named unit. A stale call is STALE whatever it names; the heartbeat,
// which writes nothing of the unit's, is not checked; an entry deleted
// from the stream has no field left to compare.
func TestSettlementNamesItsEntrysUnit(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2", "u3"}, map[string]string{"max_requeues": "1", "requeue_tolerance": "1"})
	x, ok := e.reserve("a")
	require.True(t, ok)
	require.Equal(t, "u1", x.unit)
	const ttl = "600000"
	e.transition("delivery_accounting", "a", ttl, "units", x.id, "u1")
	calls := []struct {
		name, named string
		argv        []string
	}{
		{"delivery_accounting", "u2", []string{"delivery_accounting", "a", ttl, "units", x.id, "u2"}},
		{"finalize", "u2", []string{"finalize", "a", ttl, "units", x.id, "1", "u2", "passed", "5", "", ""}},
		{"requeue", "u2", []string{"requeue", "a", ttl, "units", x.id, "1", "u2", "file", "1", "1", "5", "", ""}},
		{"abandoned", "u2", []string{"abandoned", "a", ttl, "units", x.id, "1", "u2", "5"}},
		{"unit without state", "ghost", []string{"finalize", "a", ttl, "units", x.id, "1", "ghost", "passed", "5", "", ""}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			e.requireNoChange(func() {
				_, err := queue.Transition(e.ctx, e.client, e.scriptKeys(), c.argv)
				require.ErrorIs(t, err, queue.ErrInvalidArgument)
				assert.Contains(t, err.Error(), fmt.Sprintf("units entry %s carries unit %q, not unit %q", x.id, "u1", c.named))
			})
		})
	}
	t.Run("stale", func(t *testing.T) {
		assert.Equal(t, []any{"STALE"}, e.transition("finalize", "b", ttl, "units", x.id, "1", "u2", "passed", "5", "", ""))
	})
	t.Run("heartbeat", func(t *testing.T) {
		assert.Equal(t, []any{"OK"}, e.transition("heartbeat", "a", ttl, "units", x.id, "1", "u2"))
	})
	t.Run("typed API, entry remembered", func(t *testing.T) {
		// The Build read the entry itself: it checks without ranging it.
		b, err := queue.OpenKeys(e.client, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
		require.NoError(t, err)
		r, ok, err := b.Reserve(e.ctx, "c", queue.ReserveOptions{Timeout: time.Hour, Block: time.Millisecond})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "u2", r.UnitID)
		wrong := r
		wrong.UnitID = "u3"
		e.requireNoChange(func() {
			err := b.Finalize(e.ctx, wrong, queue.Result{Outcome: events.OutcomePassed, DurationMS: 1})
			require.ErrorIs(t, err, queue.ErrInvalidArgument)
			assert.Contains(t, err.Error(), `carries unit "u2", not unit "u3"`)
		})
		require.NoError(t, b.Finalize(e.ctx, r, queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}))
	})
	t.Run("entry deleted from the stream", func(t *testing.T) {
		// Transition calls with this ttl_ms share one Build, which has
		// read the entry and remembers its unit; another ttl_ms opens a
		// Build that never read it, and has nothing to compare.
		require.NoError(t, e.do("XDEL", e.keys.Units, x.id).Error())
		assert.Equal(t, []any{"OK"}, e.transition("abandoned", "a", "600001", "units", x.id, "1", "u2", "5"))
	})
}

// The unit check reads the entry once per Build at most, and in the
// transition's first round trip: a Build that accounted for an entry
// read with a plain XREADGROUP ranges it then, and its later transitions
// on it do not; a Build that read the entry itself (Reserve) never does.
func TestEntryUnitReadOnce(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, nil)
	var xranges atomic.Int32
	proxy := newTCPProxy(t, srv.Addr(), func(down, up net.Conn) {
		go func() { _, _ = io.Copy(down, up); down.Close() }()
		go copyChunks(down, up, func(chunk []byte) { xranges.Add(int32(bytes.Count(chunk, []byte("$6\r\nXRANGE\r\n")))) })
	})
	b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	done := queue.Result{Outcome: events.OutcomePassed, DurationMS: 1}

	x, ok := e.reserve("a")
	require.True(t, ok)
	d, err := b.AccountDelivery(e.ctx, "a", x.stream, x.id, x.unit)
	require.NoError(t, err)
	r := queue.Reservation{WorkerID: "a", Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ, DeliveryCount: d.DeliveryCount}
	require.NoError(t, b.Heartbeat(e.ctx, r))
	require.NoError(t, b.Abandon(e.ctx, r, 1))
	require.NoError(t, b.Finalize(e.ctx, r, done))
	assert.EqualValues(t, 1, xranges.Load(), "XRANGEs for an entry read elsewhere")

	xranges.Store(0)
	r, ok, err = b.Reserve(e.ctx, "c", queue.ReserveOptions{Timeout: time.Hour, Block: time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, b.Finalize(e.ctx, r, done))
	assert.Zero(t, xranges.Load(), "XRANGEs for an entry the Build reserved")
}
