package integration

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTransitionSharesBuilds: Transition calls on one client, keys and
// ttl_ms share one Build, and so what it learnt: a worker guard given its
// TTL by one call is not given it again by the next (a Build opened per
// call renewed it in every commit). Another ttl_ms is another Build.
func TestTransitionSharesBuilds(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	r := e.reservation("w1")
	log := &commandLog{}
	client := roundTripClient{Client: e.client, n: &atomic.Int64{}, log: log}
	guard := fence.WorkerKey(strings.TrimSuffix(e.keys.Meta, "meta"), "w1")
	beat := func(ttl string) {
		t.Helper()
		argv := []string{queue.ModeHeartbeat, "w1", ttl, string(r.Stream), r.EntryID, strconv.FormatInt(r.DeliveryCount, 10), r.UnitID}
		reply, err := queue.Transition(e.ctx, client, e.scriptKeys(), argv)
		require.NoError(t, err)
		require.Equal(t, []any{"OK"}, reply)
	}
	const beats = 40
	for range beats {
		beat(refTTLArg)
	}
	assert.Equal(t, beats, log.count("ZADD", guard), "every heartbeat commits its token")
	assert.Equal(t, 1, renewals(log, guard), "the calls share one Build: the guard's TTL is set once")
	beat("500000")
	assert.Equal(t, 2, renewals(log, guard), "another ttl_ms opens another Build, which renews the guard")
	e.requireTTLs()
}
