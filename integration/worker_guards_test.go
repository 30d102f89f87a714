package integration

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkerGuardUpkeep: a Build gives a worker's guard its TTL and trims
// its tokens only when due, not in every commit, and the guard still
// never loses a token of the resolution window nor goes without an
// expiry, even when it vanishes under the Build. (That a lost commit is
// still found among the tokens, the lost-reply tests show.)
func TestWorkerGuardUpkeep(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	r := e.reservation("w1")
	log := &commandLog{}
	b, err := queue.OpenKeys(roundTripClient{Client: e.client, n: &atomic.Int64{}, log: log}, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	guard := fence.WorkerKey(strings.TrimSuffix(e.keys.Meta, "meta"), "w1")
	guardTTL := func() int64 {
		t.Helper()
		ms, err := e.do("PTTL", guard).AsInt64()
		require.NoError(t, err)
		return ms
	}

	const beats = 200
	for i := range beats {
		require.NoError(t, b.Heartbeat(e.ctx, r), "heartbeat %d", i+1)
		ttl := guardTTL()
		require.True(t, ttl > 0 && ttl <= ttlMS, "heartbeat %d: the guard's TTL is %d ms, want 0 < TTL <= %d", i+1, ttl, ttlMS)
	}
	assert.Equal(t, beats, log.count("ZADD", guard), "every commit adds its token")
	assert.Equal(t, 1, renewals(log, guard), "the guard's TTL is set once: it runs far longer than these heartbeats")
	assert.Equal(t, beats-1, log.count("PEXPIRE", guard)-1, "every other commit sends PEXPIRE NX")
	trims := log.count("ZREMRANGEBYSCORE", guard)
	assert.True(t, trims >= beats/20 && trims <= beats/10, "%d trims in %d commits, want one in every 10 to 20", trims, beats)
	n, err := e.do("ZCARD", guard).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1+beats, n, "the guard keeps every token of the resolution window (the reservation's, and the heartbeats')")

	// The guard vanishes (a restart from a snapshot taken before it, a
	// flush, an eviction): the next commit re-creates it, and gives it its
	// TTL at once although the Build remembers renewing it.
	require.NoError(t, e.do("DEL", guard).Error())
	require.NoError(t, b.Heartbeat(e.ctx, r))
	ttl := guardTTL()
	assert.True(t, ttl > 0 && ttl <= ttlMS, "the re-created guard's TTL is %d ms, want 0 < TTL <= %d", ttl, ttlMS)
	assert.Equal(t, 1, renewals(log, guard), "PEXPIRE NX gave it its TTL, not a renewal")
	// A token older than the window goes with the next trim.
	require.NoError(t, e.do("ZADD", guard, "1", "ancient").Error())

	// Another process of the same worker id keeps its own memory: its
	// first commit renews and trims.
	other, err := queue.OpenKeys(roundTripClient{Client: e.client, n: &atomic.Int64{}, log: log}, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, other.Heartbeat(e.ctx, r))
	assert.Equal(t, 2, renewals(log, guard))
	for range beats {
		require.NoError(t, b.Heartbeat(e.ctx, r))
		require.NoError(t, other.Heartbeat(e.ctx, r))
	}
	n, err = e.do("ZCARD", guard).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1+1+2*beats, n, "two processes keep every token of the window (the re-created guard's first, the other's first, and theirs)")
	score, err := e.do("ZSCORE", guard, "ancient").ToString()
	assert.True(t, rueidis.IsRedisNil(err), "a token past the window is trimmed: %q, %v", score, err)
	e.requireTTLs()
}

// renewals counts the unconditional PEXPIREs of key in log (not PEXPIRE NX).
func renewals(log *commandLog, key string) int {
	return log.countWhere("PEXPIRE", key, func(c []string) bool { return c[len(c)-1] != "NX" })
}

// TestReCreatedGuardTTLIsAtomic: a commit that re-creates a vanished
// worker guard gives it its TTL inside the same MULTI, so a connection lost
// right after EXEC (here: every later command on it fails unsent) leaves
// no guard without an expiry.
func TestReCreatedGuardTTLIsAtomic(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	r := e.reservation("w1")
	b, err := queue.OpenKeys(lostAfterExecClient{e.client}, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	guard := fence.WorkerKey(strings.TrimSuffix(e.keys.Meta, "meta"), "w1")
	require.NoError(t, b.Heartbeat(e.ctx, r)) // the Build now trusts the guard's TTL

	require.NoError(t, e.do("DEL", guard).Error())
	require.NoError(t, b.Heartbeat(e.ctx, r))
	ms, err := e.do("PTTL", guard).AsInt64()
	require.NoError(t, err)
	assert.True(t, ms > 0 && ms <= ttlMS, "the re-created guard's TTL is %d ms, want 0 < TTL <= %d", ms, ttlMS)
	e.requireTTLs()
}

// lostAfterExecClient hands out dedicated connections that die right after
// a round trip holding EXEC: whatever is sent on them next fails unsent.
type lostAfterExecClient struct{ rueidis.Client }

func (c lostAfterExecClient) Dedicate() (rueidis.DedicatedClient, func()) {
	d, release := c.Client.Dedicate()
	return &lostAfterExecDedicated{DedicatedClient: d}, release
}

func (c lostAfterExecClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(d rueidis.DedicatedClient) error {
		return fn(&lostAfterExecDedicated{DedicatedClient: d})
	})
}

type lostAfterExecDedicated struct {
	rueidis.DedicatedClient
	lost bool
}

// gone is a context already ended, for the commands a lost connection
// never sends.
func gone() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func (c *lostAfterExecDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if c.lost {
		ctx = gone()
	}
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c *lostAfterExecDedicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if c.lost {
		ctx = gone()
	}
	exec := false // read before sending: rueidis recycles a sent command
	for _, cmd := range cmds {
		if w := cmd.Commands(); len(w) > 0 && w[0] == "EXEC" {
			exec = true
		}
	}
	res := c.DedicatedClient.DoMulti(ctx, cmds...)
	c.lost = c.lost || exec
	return res
}
