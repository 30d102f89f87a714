package queue

import (
	"context"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reclaimTimeout is how long the replayed reclaims wait on a silent owner.
const reclaimTimeout = time.Minute

// idleUnit records a build in which w2 went quiet 90 s ago holding unit
// u2 (type "file") on entry 2-0 of the units stream, delivered once and
// never reclaimed; nothing was ever deleted from the stream, and meta
// allows 3 reclaims per unit.
func idleUnit(t *testing.T) (*replay, *Build) {
	r := newReplay(t)
	idle := pendingReply(pendingAt{"2-0", "w2", 90_000, 1})
	r.on("HEXISTS "+replayKeys.Meta+" state", mock.RedisInt64(1))
	r.on("HGET "+replayKeys.Meta+" max_reclaims", mock.RedisString("3"))
	r.on("XPENDING "+replayKeys.Units+" workers IDLE 60000 - + 1", idle)
	r.on("XPENDING "+replayKeys.Units+" workers - + ", idle)
	r.on("XINFO STREAM "+replayKeys.Units, mock.RedisMap(map[string]rueidis.RedisMessage{"max-deleted-entry-id": mock.RedisString("0-0")}))
	r.on("XRANGE "+replayKeys.Units+" 2-0 2-0", entryReply("2-0", "id", "u2", "type", "file"))
	r.on("HGET "+replayKeys.Workers+" w1", mock.RedisString(heldRecord))
	r.onFunc("HMGET "+replayKeys.UnitState, each(heldState))
	b, err := Open(r, buildID, Options{})
	require.NoError(t, err)
	return r, b
}

func TestReclaimTakesAnIdleUnit(t *testing.T) {
	r, b := idleUnit(t)
	out, err := b.Reclaim(context.Background(), "w1", reclaimTimeout, 5)
	require.NoError(t, err)
	want := Reservation{WorkerID: "w1", Stream: StreamUnits, EntryID: "2-0", UnitID: "u2", UnitType: "file", DeliveryCount: 2, ReclaimCount: 1}
	assert.Equal(t, Reclaimed{Status: ReclaimTaken, Reservation: want, UnitID: "u2", PreviousWorkerID: "w2"}, out)
	commit := r.lastCommit()
	require.NotNil(t, commit)
	assert.Contains(t, commit, "XCLAIM hopper:{b}:units workers w1 0 2-0", "a plain claim: the delivery count grows, fencing w2 out")
	assert.NotEmpty(t, withPrefix(commit, "SET hopper:{b}:fence:units:2-0 "), "ownership moved")
	assert.Contains(t, commit, `HSET hopper:{b}:unit_state u2 {"retry_index":0,"reclaim_count":1,"entered_retry":false}`)
	ev := eventOf(t, commit)
	assert.Equal(t, events.TypeReclaimed, ev.Type)
	assert.Equal(t, "w2", *ev.PreviousWorkerID)
	assert.Equal(t, int64(2), ev.DeliveryCount)
	assert.Equal(t, `{"last_seen":1700000000500,"current_unit":"u2","processed":2}`, workerWrite(t, commit, "w1"))
	watch := withPrefix(r.sentLines(), "WATCH ")
	require.NotEmpty(t, watch)
	assert.Equal(t, "WATCH hopper:{b}:fence:worker:w1 hopper:{b}:fence:units:2-0", watch[0], "decided under the guards of the worker and of the entry")
}

// Past its reclaim budget the idle unit is finalized as failed, and the
// reclaimer takes nothing.
func TestReclaimBudgetExhausted(t *testing.T) {
	r, b := idleUnit(t)
	r.onFunc("HMGET "+replayKeys.UnitState, each(`{"retry_index":1,"reclaim_count":3,"entered_retry":true}`))
	out, err := b.Reclaim(context.Background(), "w1", reclaimTimeout, 5)
	require.NoError(t, err)
	assert.Equal(t, Reclaimed{Status: ReclaimFinalized, UnitID: "u2", PreviousWorkerID: "w2"}, out)
	commit := r.lastCommit()
	assert.Contains(t, commit, "XACK hopper:{b}:units workers 2-0")
	assert.Contains(t, commit, "HINCRBY hopper:{b}:meta finalized_count 1")
	assert.Contains(t, commit, "DEL hopper:{b}:fence:units:2-0", "the entry's guard retired")
	ev := eventOf(t, commit)
	assert.Equal(t, events.TypeFinalized, ev.Type)
	assert.Equal(t, "reclaim_budget_exhausted", *ev.Reason)
	assert.Equal(t, `{"last_seen":1700000000500,"current_unit":"u1","processed":2}`, workerWrite(t, commit, "w1"), "the reclaimer's own unit kept")
}

// Meta's reclaim budget wins; the caller's fills in for a meta without.
func TestReclaimBudgetFromMetaOrCaller(t *testing.T) {
	cases := []struct {
		meta   rueidis.RedisMessage
		caller int
		want   ReclaimStatus
	}{
		{mock.RedisString("1"), 5, ReclaimFinalized},
		{mock.RedisString("5"), 1, ReclaimTaken},
		{mock.RedisNil(), 1, ReclaimFinalized},
		{mock.RedisNil(), 5, ReclaimTaken},
	}
	for _, c := range cases {
		r, b := idleUnit(t)
		r.on("HGET "+replayKeys.Meta+" max_reclaims", c.meta)
		r.onFunc("HMGET "+replayKeys.UnitState, each(`{"retry_index":0,"reclaim_count":1,"entered_retry":false}`))
		out, err := b.Reclaim(context.Background(), "w1", reclaimTimeout, c.caller)
		require.NoError(t, err)
		assert.Equal(t, c.want, out.Status, "meta %v, caller %d", c.meta, c.caller)
	}
}

// Nothing idle: one unwatched look, nothing written.
func TestReclaimFindsNothing(t *testing.T) {
	r, b := idleUnit(t)
	r.on("XPENDING "+replayKeys.Units+" workers IDLE", pendingReply())
	r.on("XPENDING "+replayKeys.Units+" workers - + ", pendingReply(pendingAt{"2-0", "w2", 5, 1}))
	out, err := b.Reclaim(context.Background(), "w1", reclaimTimeout, 5)
	require.NoError(t, err)
	assert.Equal(t, ReclaimNone, out.Status)
	assert.Empty(t, withPrefix(r.sentLines(), "WATCH"), "nothing watched")
	assert.Empty(t, r.committed())
}

func TestReclaimRefusals(t *testing.T) {
	cases := []struct {
		name  string
		world func(r *replay)
		want  error
	}{
		{"meta gone", func(r *replay) { r.on("HEXISTS "+replayKeys.Meta, mock.RedisInt64(0)) }, ErrCorrupt},
		{"idle unit's state missing", func(r *replay) {
			r.on("HMGET "+replayKeys.UnitState, mock.RedisArray(mock.RedisNil()))
		}, ErrCorrupt},
		{"reclaimer's record unreadable", func(r *replay) { r.on("HGET "+replayKeys.Workers+" w1", mock.RedisString("[")) }, errDecodes},
		{"idle unit's state unreadable", func(r *replay) { r.onFunc("HMGET "+replayKeys.UnitState, each("{")) }, errDecodes},
	}
	for _, c := range cases {
		r, b := idleUnit(t)
		c.world(r)
		_, err := b.Reclaim(context.Background(), "w1", reclaimTimeout, 5)
		assertRefused(t, r, err, c.want, c.name)
	}
	r, b := idleUnit(t)
	for _, bad := range []func() error{
		func() error { _, err := b.Reclaim(context.Background(), "", reclaimTimeout, 1); return err },
		func() error { _, err := b.Reclaim(context.Background(), "w1", -time.Second, 1); return err },
		func() error { _, err := b.Reclaim(context.Background(), "w1", reclaimTimeout, -1); return err },
	} {
		assert.ErrorIs(t, bad(), ErrInvalidArgument)
	}
	assert.Empty(t, r.sentLines())
}

// An idle entry deleted from its stream is dropped from the pending list,
// as XAUTOCLAIM drops it, its guard retired; nothing is taken.
func TestReclaimDropsADeletedEntry(t *testing.T) {
	r, b := idleUnit(t)
	r.on("XINFO STREAM "+replayKeys.Units, mock.RedisMap(map[string]rueidis.RedisMessage{"max-deleted-entry-id": mock.RedisString("5-0")}))
	r.on("XRANGE "+replayKeys.Units+" 2-0 2-0", mock.RedisArray())
	out, err := b.Reclaim(context.Background(), "w1", reclaimTimeout, 5)
	require.NoError(t, err)
	assert.Equal(t, ReclaimNone, out.Status)
	commit := r.lastCommit()
	require.NotNil(t, commit)
	assert.Equal(t, "XACK hopper:{b}:units workers 2-0", commit[0])
	assert.Contains(t, commit, "DEL hopper:{b}:fence:units:2-0")
	assert.Empty(t, withPrefix(commit, "XCLAIM"))
}

// eagerServer records a server whose XAUTOCLAIM makes its caller a
// consumer of the group (7.2 and later), on which nothing is pending.
func eagerServer(t *testing.T) (*replay, *Build) {
	r, b := idleUnit(t)
	r.on("HELLO", mock.RedisMap(map[string]rueidis.RedisMessage{"version": mock.RedisString("7.4.0")}))
	r.on("XPENDING "+replayKeys.Units, pendingReply())
	return r, b
}

// consumersCreated are the creations a reclaim by w1 sends, in order.
var consumersCreated = []string{
	"XGROUP CREATECONSUMER hopper:{b}:units:priority workers w1",
	"XGROUP CREATECONSUMER hopper:{b}:units workers w1",
}

// On such a server a reclaim leaves the groups as one would have: a look
// that finds nothing still creates the consumer in both, unfenced.
func TestReclaimCreatesConsumersAsXautoclaimWould(t *testing.T) {
	r, b := eagerServer(t)
	out, err := b.Reclaim(context.Background(), "w1", reclaimTimeout, 5)
	require.NoError(t, err)
	assert.Equal(t, ReclaimNone, out.Status)
	assert.Equal(t, consumersCreated, withPrefix(r.sentLines(), "XGROUP"))
	assert.Empty(t, r.committed(), "no commit")
}

// A Build creates each consumer once.
func TestReclaimRemembersTheConsumersItCreated(t *testing.T) {
	onDefaultEngine(t)
	r, b := eagerServer(t)
	for range 2 {
		_, err := b.Reclaim(context.Background(), "w1", reclaimTimeout, 5)
		require.NoError(t, err)
	}
	assert.Equal(t, consumersCreated, withPrefix(r.sentLines(), "XGROUP"))
}
