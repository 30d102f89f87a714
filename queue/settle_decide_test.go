package queue

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The terminal writes of a unit (finalize, and a requeue past its
// budget): the entry acknowledged, the build's count of finalized units
// one higher, and the entry's guard retired (set, then deleted, in that
// order, so that every watcher aborts and no key is left).
func assertFinalized(t *testing.T, commit []string) {
	t.Helper()
	assert.Contains(t, commit, "XACK hopper:{b}:units workers 1-0")
	assert.Contains(t, commit, "HINCRBY hopper:{b}:meta finalized_count 1")
	set := indexWithPrefix(commit, "SET hopper:{b}:fence:units:1-0 ")
	del := indexWithPrefix(commit, "DEL hopper:{b}:fence:units:1-0")
	assert.True(t, set >= 0 && del > set, "guard set at %d, then deleted at %d", set, del)
	assert.Empty(t, withPrefix(commit, "XADD "+replayKeys.Priority), "nothing put back")
}

func TestFinalizeWrites(t *testing.T) {
	r, b := heldUnit(t)
	res := Result{Outcome: events.OutcomeFailed, DurationMS: 12.5, Reason: "test_failure", Errors: json.RawMessage(`[{"class":"E"}]`),
		TestResults: json.RawMessage(`{"t":1}`)}
	require.NoError(t, b.Finalize(context.Background(), w1u1, res))
	commit := r.lastCommit()
	assertFinalized(t, commit)
	ev := eventOf(t, commit)
	assert.Equal(t, events.TypeFinalized, ev.Type)
	assert.Equal(t, events.OutcomeFailed, ev.Outcome)
	assert.Equal(t, 12.5, ev.DurationMS)
	assert.Equal(t, int64(serverTimeMS), ev.AtMS, "stamped with the server's time")
	assert.JSONEq(t, `[{"class":"E"}]`, string(ev.Errors))
	assert.Equal(t, `{"last_seen":1700000000500,"current_unit":null,"processed":3}`, workerWrite(t, commit, "w1"),
		"the worker holds nothing now, and processed one more")
	assert.Contains(t, commit, `HSET hopper:{b}:tests ["u1","units","1-0","w1"] {"t":1}`, "the test results beside the log")
}

func TestFinalizeRefusesABadResult(t *testing.T) {
	for _, res := range []Result{
		{Outcome: "maybe"},
		{Outcome: events.OutcomePassed, DurationMS: -1},
		{Outcome: events.OutcomePassed, Errors: json.RawMessage("{")},
		{Outcome: events.OutcomePassed, TestResults: json.RawMessage("[")},
	} {
		r, b := heldUnit(t)
		assert.ErrorIs(t, b.Finalize(context.Background(), w1u1, res), ErrInvalidArgument, "%+v", res)
		assert.Empty(t, r.sentLines())
	}
}

func TestAbandonWrites(t *testing.T) {
	r, b := heldUnit(t)
	require.NoError(t, b.Abandon(context.Background(), w1u1, 99))
	commit := r.lastCommit()
	ev := eventOf(t, commit)
	assert.Equal(t, events.TypeAbandoned, ev.Type)
	assert.Equal(t, 99.0, ev.ElapsedMS)
	assert.Equal(t, `{"last_seen":1700000000500,"current_unit":"u1","processed":2}`, workerWrite(t, commit, "w1"), "current unit kept")
	assert.Empty(t, withPrefix(commit, "XACK"), "the entry is left for a reclaim")
	assert.Empty(t, withPrefix(commit, "SET hopper:{b}:fence:units"), "its guard too")
	assert.ErrorIs(t, b.Abandon(context.Background(), w1u1, -1), ErrInvalidArgument)
}

func TestAccountDeliveryWrites(t *testing.T) {
	r, b := heldUnit(t)
	r.onFunc("HMGET "+replayKeys.UnitState, each(`{"retry_index":1,"reclaim_count":2,"entered_retry":true}`))
	d, err := b.AccountDelivery(context.Background(), "w1", StreamUnits, "1-0", "u1")
	require.NoError(t, err)
	assert.Equal(t, Delivery{DeliveryCount: 1, RetryIndex: 1, ReclaimCount: 2}, d)
	commit := r.lastCommit()
	ev := eventOf(t, commit)
	assert.Equal(t, events.TypeDelivered, ev.Type)
	assert.Equal(t, int64(1), ev.DeliveryCount)
	assert.Equal(t, int64(4), ev.OwnershipGeneration, "1 + retries + reclaims")
	assert.Equal(t, `{"last_seen":1700000000500,"current_unit":"u1","processed":2}`, workerWrite(t, commit, "w1"))
	assert.Empty(t, withPrefix(commit, "SET hopper:{b}:fence:units"), "ownership did not move")
}

// Requeue's decision: within the unit's cap and the build's tolerance
// the unit goes back on the priority stream, one retry higher; past
// either, it is finalized as failed.
func TestRequeueDecides(t *testing.T) {
	cases := []struct {
		name    string
		state   string
		meta    []string // max_requeues, requeue_tolerance, total_units, requeued_units_count
		caps    Budgets
		want    Requeued
		entered bool // the unit enters retry: the build's count grows
	}{
		{"first retry", heldState, []string{"2", "0.5", "10", "0"}, Budgets{}, Requeued{Requeued: true, RetryIndex: 1}, true},
		{"second retry", `{"retry_index":1,"reclaim_count":0,"entered_retry":true}`, []string{"2", "0.5", "10", "5"}, Budgets{},
			Requeued{Requeued: true, RetryIndex: 2}, false},
		{"unit cap spent", `{"retry_index":2,"reclaim_count":0,"entered_retry":true}`, []string{"2", "0.5", "10", "1"}, Budgets{},
			Requeued{RetryIndex: 2}, false},
		{"tolerance spent", heldState, []string{"2", "0.5", "10", "5"}, Budgets{}, Requeued{}, false},
		{"meta's caps win", heldState, []string{"0", "1", "10", "0"}, Budgets{MaxRequeues: 5, RequeueTolerance: 1}, Requeued{}, false},
		{"the worker's caps fill in", heldState, []string{"", "", "10", ""}, Budgets{MaxRequeues: 1, RequeueTolerance: 1},
			Requeued{Requeued: true, RetryIndex: 1}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, b := heldUnit(t)
			r.onFunc("HMGET "+replayKeys.UnitState, each(c.state))
			r.on("HMGET "+replayKeys.Meta+" max_requeues", hmgetReply(c.meta...))
			r.on("XINFO STREAM "+replayKeys.Priority, mock.RedisMap(map[string]rueidis.RedisMessage{"last-generated-id": mock.RedisString("1700000000500-3")}))
			out, err := b.Requeue(context.Background(), w1u1, Result{DurationMS: 3, FailureSummary: "boom"}, c.caps)
			require.NoError(t, err)
			commit := r.lastCommit()
			ev := eventOf(t, commit)
			if !c.want.Requeued {
				assert.Equal(t, c.want, out)
				assertFinalized(t, commit)
				assert.Equal(t, events.TypeFinalized, ev.Type)
				assert.Equal(t, "retry_budget_exhausted", *ev.Reason)
				return
			}
			assert.Equal(t, "1700000000500-4", out.NewEntryID, "after the tail, at the server's time")
			c.want.NewEntryID = out.NewEntryID
			assert.Equal(t, c.want, out)
			assert.Equal(t, events.TypeRequeued, ev.Type)
			assert.Equal(t, out.NewEntryID, ev.NewEntryID)
			assert.Equal(t, "boom", *ev.FailureSummary)
			assert.Contains(t, commit, "XACK hopper:{b}:units workers 1-0")
			assert.Contains(t, commit, "XADD hopper:{b}:units:priority "+out.NewEntryID+" id u1 type file")
			assert.NotEmpty(t, withPrefix(commit, "SET hopper:{b}:fence:priority-tail "), "the tail moved")
			assert.Empty(t, withPrefix(commit, "HINCRBY hopper:{b}:meta finalized_count"))
			entered := withPrefix(commit, "HINCRBY hopper:{b}:meta requeued_units_count 1")
			assert.Equal(t, c.entered, len(entered) == 1)
			assert.Equal(t, `{"last_seen":1700000000500,"current_unit":null,"processed":3}`, workerWrite(t, commit, "w1"))
		})
	}
}

func TestRequeueRefusesBadArguments(t *testing.T) {
	noType := w1u1
	noType.UnitType = ""
	cases := []struct {
		r    Reservation
		caps Budgets
	}{
		{noType, Budgets{}},
		{w1u1, Budgets{MaxRequeues: -1}},
		{w1u1, Budgets{RequeueTolerance: 2}},
		{w1u1, Budgets{MaxReclaims: -1}},
	}
	for _, c := range cases {
		r, b := heldUnit(t)
		_, err := b.Requeue(context.Background(), c.r, Result{}, c.caps)
		assert.ErrorIs(t, err, ErrInvalidArgument, "%+v", c)
		assert.Empty(t, r.sentLines())
	}
}
