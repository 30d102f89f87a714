package queue

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hopper-queue/hopper/queue/internal/engine"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldByMany records a build in which each worker wN holds unit uN on
// entry N-0 of the units stream, delivered once.
func heldByMany(t *testing.T) (*replay, *Build) {
	r, b := heldUnit(t)
	r.onFunc("XPENDING "+replayKeys.Units+" workers ", func(words []string) rueidis.RedisResult {
		id := words[4]
		return mock.Result(pendingReply(pendingAt{id, "w" + strings.TrimSuffix(id, "-0"), 5, 1}))
	})
	r.onFunc("XRANGE "+replayKeys.Units+" ", func(words []string) rueidis.RedisResult {
		id := words[2]
		return mock.Result(entryReply(id, "id", "u"+strings.TrimSuffix(id, "-0"), "type", "file"))
	})
	return r, b
}

// reservationOf is wN's reservation of uN.
func reservationOf(n int) Reservation {
	s := strconv.Itoa(n)
	return Reservation{WorkerID: "w" + s, Stream: StreamUnits, EntryID: s + "-0", UnitID: "u" + s, UnitType: "file", DeliveryCount: 1}
}

// Transitions that arrive while every lane is busy share one transaction:
// each decided alone on its own reads, a refused one writing nothing, the
// others' writes merged, the build's TTLs renewed once; two requeues of
// one batch take consecutive ids off one tail.
func TestBatchSharesOneTransaction(t *testing.T) {
	onDefaultEngine(t)
	r, b := heldByMany(t)
	r.on("XPENDING "+replayKeys.Units+" workers 6-0", pendingReply(pendingAt{"6-0", "w9", 0, 2}))
	gate, arrived := make(chan struct{}), make(chan struct{}, engine.MaxLanes)
	var watches atomic.Int32
	r.onFunc("WATCH hopper:{b}:fence:worker:w", func([]string) rueidis.RedisResult {
		if watches.Add(1) <= engine.MaxLanes {
			arrived <- struct{}{}
			<-gate // every lane busy until the queue is full
		}
		return mock.Result(mock.RedisString("OK"))
	})
	ctx := context.Background()
	var lanes, queued sync.WaitGroup
	for n := 1; n <= engine.MaxLanes; n++ {
		lanes.Go(func() { assert.NoError(t, b.Heartbeat(ctx, reservationOf(n))) })
		<-arrived
	}
	var out5, out7 Requeued
	var err5, err6, err7 error
	c5, c6, c7 := waiting(), waiting(), waiting()
	queued.Go(func() { out5, err5 = b.Requeue(c5, reservationOf(5), Result{}, Budgets{}) })
	<-c5.queued
	queued.Go(func() { err6 = b.Finalize(c6, reservationOf(6), Result{Outcome: events.OutcomePassed}) })
	<-c6.queued
	queued.Go(func() { out7, err7 = b.Requeue(c7, reservationOf(7), Result{}, Budgets{}) })
	<-c7.queued
	close(gate)
	lanes.Wait()
	queued.Wait()

	require.NoError(t, err5)
	require.NoError(t, err7)
	assert.ErrorIs(t, err6, ErrStale, "refused alone")
	ids := []string{out5.NewEntryID, out7.NewEntryID}
	assert.Equal(t, []string{"1700000000500-0", "1700000000500-1"}, ids, "one tail, in arrival order")
	var batch []string
	for _, c := range r.committed() {
		if len(withPrefix(c, "XADD "+replayKeys.Priority)) > 0 {
			require.Nil(t, batch, "one transaction")
			batch = c
		}
	}
	require.NotNil(t, batch)
	assert.Len(t, withPrefix(batch, "XADD "+replayKeys.Priority), 2)
	assert.Equal(t, []string{"XACK hopper:{b}:units workers 5-0 7-0"}, withPrefix(batch, "XACK"), "merged")
	assert.Equal(t, []string{"HINCRBY hopper:{b}:meta requeued_units_count 2"}, withPrefix(batch, "HINCRBY"), "summed")
	workers := withPrefix(batch, "HSET "+replayKeys.Workers)
	require.Len(t, workers, 1, "one HSET of both records")
	assert.Contains(t, workers[0], " w5 ")
	assert.Contains(t, workers[0], " w7 ")
	assert.NotContains(t, workers[0], " w6 ")
	assert.Len(t, withPrefix(batch, "PEXPIRE "+replayKeys.Meta), 1, "renewed once")
	assert.Len(t, withPrefix(batch, "ZADD "), 2, "each writer's guard has the token")

	// w6, refused, wrote nothing to its guard: the guard is as new to the
	// Build as before, and w6's next commit renews and trims it in full.
	require.NoError(t, b.Liveness(ctx, "w6", ""))
	next := r.lastCommit()
	assert.Len(t, withPrefix(next, "ZREMRANGEBYSCORE hopper:{b}:fence:worker:w6 "), 1, "trimmed")
	renew := withPrefix(next, "PEXPIRE hopper:{b}:fence:worker:w6 ")
	require.Len(t, renew, 1)
	assert.NotContains(t, renew[0], "NX", "renewed, not only given a TTL it lacked")
}

// queuedContext is a caller's context that tells, by closing queued,
// when its Done is first asked for: a transition asks for it first when
// it waits for a lane.
type queuedContext struct {
	context.Context
	once   sync.Once
	queued chan struct{}
}

func waiting() *queuedContext {
	return &queuedContext{Context: context.Background(), queued: make(chan struct{})}
}

func (c *queuedContext) Done() <-chan struct{} {
	c.once.Do(func() { close(c.queued) })
	return c.Context.Done()
}
