package integration

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClockCarriesTimeOnlyWhenDue: a Build's transitions stamp the
// server's time from its clock (queue/internal/machinery/clock.go), so back-to-back
// heartbeats send one TIME, not one each; an anchor gone stale is
// refreshed by a TIME carried on the next round trip; and every last_seen
// written lies between the server's times read before and after, less
// the documented lag of one round trip, never going backwards.
func TestClockCarriesTimeOnlyWhenDue(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	r := e.reservation("w1")
	log := &commandLog{}
	b, err := queue.OpenKeys(roundTripClient{Client: e.client, n: &atomic.Int64{}, log: log}, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	serverMS := func() int64 {
		t.Helper()
		parts, err := e.do("TIME").AsStrSlice()
		require.NoError(t, err)
		sec, _ := strconv.ParseInt(parts[0], 10, 64)
		usec, _ := strconv.ParseInt(parts[1], 10, 64)
		return sec*1000 + usec/1000
	}
	lastSeen := func() int64 {
		t.Helper()
		raw, err := e.do("HGET", e.keys.Workers, "w1").ToString()
		require.NoError(t, err)
		var rec struct {
			LastSeen int64 `json:"last_seen"`
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &rec))
		return rec.LastSeen
	}
	times := func() int { return log.countName("TIME") }

	// The clock lags the server by at most the round trip that carried
	// its anchor, and that round trip lay within one of these calls.
	var seen int64
	var longest time.Duration
	beat := func() {
		t.Helper()
		before := serverMS()
		start := time.Now()
		require.NoError(t, b.Heartbeat(e.ctx, r))
		longest = max(longest, time.Since(start))
		after := serverMS()
		got := lastSeen()
		assert.GreaterOrEqual(t, got, seen, "last_seen went backwards")
		lag := longest.Milliseconds() + 1 // and TIME's microseconds cut off
		assert.True(t, got >= before-lag && got <= after, "last_seen %d outside the server's %d..%d, less a lag of %d ms", got, before, after, lag)
		seen = got
	}
	beat()
	require.Equal(t, 1, times(), "the first transition carries a TIME: the clock has no anchor")
	for range 5 {
		beat()
	}
	assert.Equal(t, 1, times(), "heartbeats within the anchor's refresh age carry no TIME")
	time.Sleep(300 * time.Millisecond) // past machinery.ClockRefresh
	beat()
	assert.Equal(t, 2, times(), "an anchor past its refresh age is renewed on the next round trip")
	time.Sleep(1100 * time.Millisecond) // past machinery.ClockMaxAge
	beat()
	assert.Equal(t, 3, times(), "an anchor past its maximum age is never used")
}
