package queue

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The transitions that decide on nothing but meta and the worker's own
// record: Liveness, and the worker's prebuilt events.

func TestLivenessWrites(t *testing.T) {
	for _, current := range []string{"", "u1"} {
		r, b := heldUnit(t)
		r.on("HGET "+replayKeys.Workers+" w1", mock.RedisString(heldRecord))
		require.NoError(t, b.Liveness(context.Background(), "w1", current))
		commit := r.lastCommit()
		want := `{"last_seen":1700000000500,"current_unit":null,"processed":2}`
		if current != "" {
			want = `{"last_seen":1700000000500,"current_unit":"u1","processed":2}`
		}
		assert.Equal(t, want, workerWrite(t, commit, "w1"))
		assert.Contains(t, commit, "PEXPIRE "+replayKeys.Meta+" 14400000", "the build kept alive")
		assert.Equal(t, "WATCH hopper:{b}:fence:worker:w1", r.sentLines()[0], "decided under the worker's guard")
	}
}

func TestLivenessRefusals(t *testing.T) {
	cases := []struct {
		name  string
		world func(r *replay)
		want  error
	}{
		{"meta gone", func(r *replay) { r.on("HEXISTS "+replayKeys.Meta, mock.RedisInt64(0)) }, ErrCorrupt},
		{"record unreadable", func(r *replay) { r.on("HGET "+replayKeys.Workers, mock.RedisString("[")) }, errDecodes},
		{"meta read fails", func(r *replay) { r.on("HEXISTS "+replayKeys.Meta, mock.RedisError("WRONGTYPE no hash")) }, errDecodes},
	}
	for _, c := range cases {
		r, b := heldUnit(t)
		c.world(r)
		assertRefused(t, r, b.Liveness(context.Background(), "w1", ""), c.want, c.name)
	}
	r, b := heldUnit(t)
	assert.ErrorIs(t, b.Liveness(context.Background(), "", ""), ErrInvalidArgument)
	assert.ErrorIs(t, b.Liveness(context.Background(), "w1", string([]byte{0xff})), ErrInvalidArgument)
	assert.Empty(t, r.sentLines())
}

// reserveNothingTwice has w1 reserve and find nothing twice: the first
// marks it idle, so that the second's blocking read keeps a watch.
func reserveNothingTwice(t *testing.T, b *Build) {
	t.Helper()
	for range 2 {
		rs, err := b.ReserveBatch(context.Background(), "w1", 1, ReserveOptions{})
		require.NoError(t, err)
		require.Empty(t, rs)
	}
}

// An idle worker's blocking read carries Liveness's WATCH and reads; its
// Liveness then commits on them, in one round trip.
func TestLivenessCommitsOnTheIdleReadsWatch(t *testing.T) {
	onDefaultEngine(t)
	r, b := heldUnit(t)
	ctx := context.Background()
	reserveNothingTwice(t, b)
	before := len(r.sentLines())
	require.NoError(t, b.Liveness(ctx, "w1", ""))
	sent := r.sentLines()[before:]
	assert.Equal(t, "MULTI", sent[0], "no round trip before the commit: %q", sent)
	assert.Len(t, r.committed(), 1)
}

// Reads made before the call may back a commit, never a refusal: kept
// reads that say meta is gone are read again, and the fresh ones decide.
func TestLivenessNeverRefusesOnKeptReads(t *testing.T) {
	onDefaultEngine(t)
	r, b := heldUnit(t)
	// Meta is read by the first reservation's reclaim look, then by the
	// second's priority read, then by its watched units read, whose reads
	// Liveness keeps, then by Liveness afresh.
	var metaReads atomic.Int32
	r.onFunc("HEXISTS "+replayKeys.Meta, func([]string) rueidis.RedisResult {
		if metaReads.Add(1) == 3 {
			return mock.Result(mock.RedisInt64(0))
		}
		return mock.Result(mock.RedisInt64(1))
	})
	ctx := context.Background()
	reserveNothingTwice(t, b)
	before := len(r.sentLines())
	require.NoError(t, b.Liveness(ctx, "w1", ""))
	sent := r.sentLines()[before:]
	require.Equal(t, int32(4), metaReads.Load(), "read afresh: %q", sent)
	assert.Equal(t, []string{"UNWATCH", "WATCH hopper:{b}:fence:worker:w1"}, sent[:2], "the kept connection given back, then fresh reads")
	assert.Len(t, r.committed(), 1, "committed on fresh reads")
}

func TestAppendPrebuiltWrites(t *testing.T) {
	r, b := heldUnit(t)
	ev, err := events.WorkerError{WorkerID: "w1", Phase: events.PhaseExecution, Class: "E", Message: "m"}.Encode()
	require.NoError(t, err)
	r.on("HEXISTS "+replayKeys.Meta, mock.RedisInt64(0)) // a worker may report a build whose state is gone
	require.NoError(t, b.AppendPrebuilt(context.Background(), "w1", ev))
	assert.Equal(t, []string{"WATCH hopper:{b}:fence:worker:w1", "TIME"}, r.sentLines()[:2])
	got := eventOf(t, r.lastCommit())
	assert.Equal(t, events.TypeWorkerError, got.Type)
	assert.Equal(t, int64(serverTimeMS), got.AtMS, "stamped with the server's time")
	assert.ErrorIs(t, b.AppendPrebuilt(context.Background(), "w1", []byte("[")), ErrInvalidArgument)
	assert.ErrorIs(t, b.AppendPrebuilt(context.Background(), "", ev), ErrInvalidArgument)
}

// A lone settlement refused STALE keeps its connection, watching the
// worker's guard, and the stale_rejected its worker appends next commits
// on it in one round trip.
func TestStaleRejectedCommitsOnTheRefusalsWatch(t *testing.T) {
	onDefaultEngine(t)
	r, b := heldUnit(t)
	r.on("XPENDING "+replayKeys.Units, pendingReply(pendingAt{"1-0", "w2", 0, 2}))
	ctx := context.Background()
	require.ErrorIs(t, b.Finalize(ctx, w1u1, Result{Outcome: events.OutcomePassed}), ErrStale)
	ev, err := events.StaleRejected{UnitID: "u1", WorkerID: "w1", Stream: "units", EntryID: "1-0", DeliveryCount: 1, Operation: "finalize"}.Encode()
	require.NoError(t, err)
	before := len(r.sentLines())
	require.NoError(t, b.AppendPrebuilt(ctx, "w1", ev))
	assert.Equal(t, "MULTI", r.sentLines()[before], "no WATCH of its own")
	assert.Equal(t, events.TypeStaleRejected, eventOf(t, r.lastCommit()).Type)
}
