package engine

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// busyLanes makes s hold the WATCH of each of the first MaxLanes workers
// until release is closed, and runs an op of each: every lane is then
// busy. wait returns once they are all done.
func busyLanes(t *testing.T, s *fakeServer, e *Engine[string, testTrip]) (release func(), wait func()) {
	gate, arrived := make(chan struct{}), make(chan struct{}, MaxLanes)
	s.hold = func(args []string) {
		if args[0] == "WATCH" && strings.HasPrefix(args[1], "guard:lane") {
			arrived <- struct{}{}
			<-gate
		}
	}
	var lanes sync.WaitGroup
	for n := range MaxLanes {
		lane := strconv.Itoa(n)
		lanes.Go(func() { assert.NoError(t, e.Do(context.Background(), newOp("first", "lane"+lane, "l"+lane))) })
		<-arrived
	}
	return func() { close(gate) }, lanes.Wait
}

// askedDone is a context that tells, by closing queued, when its Done is
// first asked for: an op asks for it when it waits for a lane.
type askedDone struct {
	context.Context
	once   sync.Once
	queued chan struct{}
}

func waitingCtx(ctx context.Context) *askedDone {
	return &askedDone{Context: ctx, queued: make(chan struct{})}
}

func (c *askedDone) Done() <-chan struct{} {
	c.once.Do(func() { close(c.queued) })
	return c.Context.Done()
}

// Ops that arrive while every lane is busy wait, and then commit together,
// in one transaction, each with its own outcome.
func TestDoBatchesWhatWaits(t *testing.T) {
	s := &fakeServer{values: map[string]string{"u6": "gone"}}
	e := engineOn(t, s, &testDomain{refuse: refuseValue("gone")})
	release, wait := busyLanes(t, s, e)
	var queued sync.WaitGroup
	errs := make([]error, 3)
	for i, u := range []string{"u5", "u6", "u7"} {
		ctx := waitingCtx(context.Background())
		queued.Go(func() { errs[i] = e.Do(ctx, newOp("first", "w"+u, u)) })
		<-ctx.queued
	}
	release()
	wait()
	queued.Wait()
	require.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], errRefused, "refused alone")
	require.NoError(t, errs[2])
	var batch []string
	for _, tx := range s.transactions() {
		if strings.HasPrefix(tx[0], "u") {
			require.Nil(t, batch, "one transaction for the ops that waited")
			batch = tx
		}
	}
	assert.Equal(t, []string{"u5=first", "u7=first"}, batch)
}

// An op whose caller gives up while it waits for a lane leaves the queue
// with its context's error, and nothing of it is committed.
func TestDoWithdrawsAnOpItsCallerGaveUp(t *testing.T) {
	s := &fakeServer{values: map[string]string{}}
	e := engineOn(t, s, &testDomain{})
	release, wait := busyLanes(t, s, e)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := waitingCtx(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Do(waiting, newOp("first", "w9", "u9")) }()
	<-waiting.queued
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	release()
	wait()
	assert.NotContains(t, s.committed(), "u9=first")
}

// carriedRead is a Behind that carries one GET behind a commit's EXEC.
type carriedRead struct {
	key string
	got chan string
}

func (r *carriedRead) Carry(c Conn) rueidis.Commands {
	return rueidis.Commands{c.B().Get().Key(r.key).Build()}
}

func (r *carriedRead) Arrived(_ Conn, _ func(), res []rueidis.RedisResult, _ error) bool {
	v, _ := res[0].ToString()
	r.got <- v
	return false
}

// What the domain asks a commit to carry (Domain.Carried) is sent behind
// its EXEC, in the same write, and gets its replies.
func TestDoCarriesTheDomainsReads(t *testing.T) {
	s := &fakeServer{values: map[string]string{"next": "entries"}}
	read := &carriedRead{key: "next", got: make(chan string, 1)}
	e := engineOn(t, s, &testDomain{carried: read})
	require.NoError(t, e.Do(context.Background(), newOp("first", "w1", "u1")))
	assert.Equal(t, "entries", <-read.got)
	var afterExec []string
	s.mu.Lock()
	for i, args := range s.sent {
		if args[0] == "EXEC" && i+1 < len(s.sent) {
			afterExec = s.sent[i+1]
		}
	}
	s.mu.Unlock()
	assert.Equal(t, []string{"GET", "next"}, afterExec)
}
