package queue

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A heartbeat restarts the entry's idle time without counting a
// delivery, sets the entry's guard so that a reclaim that judged the old
// idle time aborts, shows the worker alive on its unit, and renews the
// build's TTLs; its token goes to the worker's guard.
func TestHeartbeatWrites(t *testing.T) {
	r, b := heldUnit(t)
	r.on("HMGET "+replayKeys.Workers, bulks(`{"last_seen":1,"current_unit":null,"processed":2}`))
	require.NoError(t, b.Heartbeat(context.Background(), w1u1))
	commit := r.lastCommit()
	require.NotNil(t, commit)
	assert.Equal(t, "XCLAIM hopper:{b}:units workers w1 0 1-0 RETRYCOUNT 1 JUSTID", commit[0])
	guard := withPrefix(commit, "SET hopper:{b}:fence:units:1-0 ")
	require.Len(t, guard, 1)
	token := strings.Fields(guard[0])[2]
	assert.True(t, strings.HasSuffix(guard[0], " PX 14400000"), guard[0])
	assert.Equal(t, `{"last_seen":1700000000500,"current_unit":"u1","processed":2}`, workerWrite(t, commit, "w1"))
	for _, key := range replayKeys.live() {
		assert.Contains(t, commit, "PEXPIRE "+key+" 14400000")
	}
	assert.Contains(t, commit, "ZADD hopper:{b}:fence:worker:w1 1700000000500 "+token, "the same token on the worker's guard")
	assert.Empty(t, withPrefix(commit, "XADD"), "no event")
}

// The fence of a heartbeat is the whole reservation: its delivery count
// too, which a reclaim raises.
func TestHeartbeatRetryCountIsTheDeliveryCountRead(t *testing.T) {
	r, b := heldUnit(t)
	r.on("XPENDING "+replayKeys.Units, pendingReply(pendingAt{"1-0", "w1", 7, 3}))
	res := w1u1
	res.DeliveryCount = 3
	require.NoError(t, b.Heartbeat(context.Background(), res))
	assert.Equal(t, "XCLAIM hopper:{b}:units workers w1 0 1-0 RETRYCOUNT 3 JUSTID", r.lastCommit()[0])
}

// A heartbeat on a build whose meta is gone is CORRUPT before the fence
// is looked at.
func TestHeartbeatOnAGoneBuild(t *testing.T) {
	r, b := heldUnit(t)
	r.on("HEXISTS "+replayKeys.Meta, mock.RedisInt64(0))
	r.on("XPENDING "+replayKeys.Units, pendingReply())
	assert.ErrorIs(t, b.Heartbeat(context.Background(), w1u1), ErrCorrupt)
}
