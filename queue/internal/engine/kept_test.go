package engine

import (
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/sched"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"go.uber.org/mock/gomock"
)

// A kept round trip is stamped with the moment its replies arrived, not
// the moment a transition stands on them: a TIME among them is that old
// (machinery.Clock), however long the reads wait to be used.
func TestKeptTripStampsItsArrival(t *testing.T) {
	mono := time.Hour
	e := New[string, testTrip](&testDomain{}, Config{Client: mock.NewClient(gomock.NewController(t))})
	e.Clock = machinery.NewClock(func() time.Duration { return mono })
	conn := mock.NewDedicatedClient(gomock.NewController(t))
	ahead := &keptAhead[string, testTrip]{e: e, subject: "u1", claim: sched.Claims{Worker: "w1"}, mode: "second", chain: &chained[string, testTrip]{}}
	cmds := ahead.Carry(conn)
	assert.Len(t, cmds, 2, "WATCH and the next transition's read")
	assert.True(t, ahead.mine.kept, "reads made before their call are marked kept")
	mono += 2 * time.Millisecond
	ahead.Arrived(conn, func() {}, []rueidis.RedisResult{ok(), mock.Result(mock.RedisNil())}, nil)
	mono += 900 * time.Millisecond
	assert.Equal(t, time.Hour+2*time.Millisecond, ahead.mine.arrivedAt())
}

// The rule of every path: a decision on kept reads that refuses any op, or
// fails, starts over on fresh reads and leaves no op its refusal; on
// fresh reads, refusals stand.
func TestRefusalsNeverStandOnKeptReads(t *testing.T) {
	writes := rueidis.Commands{}
	a, b := &testOp{}, &testOp{Err: errRefused}
	got, err := onKept(true, []*testOp{a, b}, writes, nil)
	assert.ErrorIs(t, err, txn.ErrRetry)
	assert.Nil(t, got)
	assert.NoError(t, b.Err, "a refusal decided on kept reads is left to no op")

	b.Err = errRefused
	got, err = onKept(false, []*testOp{a, b}, writes, nil)
	assert.NoError(t, err)
	assert.NotNil(t, got)
	assert.ErrorIs(t, b.Err, errRefused, "on fresh reads a refusal stands")

	_, err = onKept[string, testTrip](true, nil, nil, errRefused)
	assert.ErrorIs(t, err, txn.ErrRetry, "a failed decision on kept reads starts over")
	got, err = onKept[string, testTrip](true, []*testOp{a}, writes, nil)
	assert.NoError(t, err, "kept reads back a commit")
	assert.NotNil(t, got)
}

// The inline engine has every gate of the machinery shut.
func TestInlineShutsEveryGate(t *testing.T) {
	e := New[string, testTrip](&testDomain{}, Config{Client: mock.NewClient(gomock.NewController(t)), Inline: true})
	assert.True(t, e.Inline())
	assert.True(t, e.Clock.Fresh)
	assert.True(t, e.Reclaims.Off)
	assert.True(t, e.watches.off)
	assert.True(t, e.workerGuards.Off)
	assert.True(t, e.Consumers.Off)
	d := New[string, testTrip](&testDomain{}, Config{Client: mock.NewClient(gomock.NewController(t))})
	assert.False(t, d.Inline() || d.Clock.Fresh || d.Reclaims.Off || d.watches.off || d.workerGuards.Off || d.Consumers.Off)
}
