package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

func start(t *testing.T) (*Server, rueidis.Client) {
	t.Helper()
	s, err := Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return s, c
}

func do(t *testing.T, c rueidis.Client, args ...string) rueidis.RedisResult {
	t.Helper()
	return c.Do(context.Background(), c.B().Arbitrary(args...).Build())
}

// pendingRow returns consumer, idle ms and delivery count of one entry.
func pendingRow(t *testing.T, c rueidis.Client, stream, id string) (string, int64, int64) {
	t.Helper()
	rows, err := do(t, c, "XPENDING", stream, "g", id, id, "1").ToArray()
	require.NoError(t, err)
	require.Len(t, rows, 1, "entry %s is not pending", id)
	f, err := rows[0].ToArray()
	require.NoError(t, err)
	owner, _ := f[1].ToString()
	idle, _ := f[2].AsInt64()
	count, _ := f[3].AsInt64()
	return owner, idle, count
}

// The stream semantics the queue depends on, as Redis has them.
func TestClaimSemantics(t *testing.T) {
	_, c := start(t)
	require.NoError(t, do(t, c, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM").Error())
	id, err := do(t, c, "XADD", "s", "*", "id", "u1").ToString()
	require.NoError(t, err)
	_, err = do(t, c, "XREADGROUP", "GROUP", "g", "w1", "COUNT", "1", "STREAMS", "s", ">").AsXRead()
	require.NoError(t, err)
	_, _, count := pendingRow(t, c, "s", id)
	require.Equal(t, int64(1), count)

	time.Sleep(30 * time.Millisecond)
	// A heartbeat's claim, as the queue sends it inside MULTI: RETRYCOUNT
	// with JUSTID keeps the count (miniredis counts a bare JUSTID claim),
	// and the idle time starts over.
	res := c.DoMulti(context.Background(),
		c.B().Multi().Build(),
		c.B().Xclaim().Key("s").Group("g").Consumer("w1").MinIdleTime("0").Id(id).Retrycount(1).Justid().Build(),
		c.B().Exec().Build())
	for _, r := range res {
		require.NoError(t, r.Error())
	}
	owner, idle, count := pendingRow(t, c, "s", id)
	require.Equal(t, "w1", owner)
	require.Equal(t, int64(1), count, "a heartbeat must leave the delivery count alone")
	require.Less(t, idle, int64(30))

	// A plain XCLAIM (a reclaim) moves the owner and adds one.
	entries, err := do(t, c, "XCLAIM", "s", "g", "w2", "0", id).AsXRange()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	owner, _, count = pendingRow(t, c, "s", id)
	require.Equal(t, "w2", owner)
	require.Equal(t, int64(2), count)

	// JUSTID of an entry that is not pending claims nothing.
	got, err := do(t, c, "XCLAIM", "s", "g", "w1", "0", "1-1", "JUSTID").AsStrSlice()
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestKeysExpireOnTheClock(t *testing.T) {
	_, c := start(t)
	require.NoError(t, do(t, c, "SET", "k", "v", "PX", "50").Error())
	time.Sleep(120 * time.Millisecond)
	n, err := do(t, c, "EXISTS", "k").AsInt64()
	require.NoError(t, err)
	require.Zero(t, n)
}
