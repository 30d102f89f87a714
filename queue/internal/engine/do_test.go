package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hopper-queue/hopper/queue/internal/sched"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
)

// fakeServer answers a dedicated connection as Redis would, with values
// for GET, and records every command it was sent.
type fakeServer struct {
	mu     sync.Mutex
	values map[string]string
	sent   [][]string
	// hold, when set, is called with each command before it is answered.
	hold func(args []string)
}

func (s *fakeServer) conn(ctrl *gomock.Controller) *mock.DedicatedClient {
	c := mock.NewDedicatedClient(ctrl)
	c.EXPECT().DoMulti(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
		return s.reply(cmds)
	}).AnyTimes()
	c.EXPECT().Do(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, cmd rueidis.Completed) rueidis.RedisResult {
		return s.reply([]rueidis.Completed{cmd})[0]
	}).AnyTimes()
	return c
}

func (s *fakeServer) reply(cmds []rueidis.Completed) []rueidis.RedisResult {
	if s.hold != nil {
		for _, cmd := range cmds {
			s.hold(cmd.Commands())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res := make([]rueidis.RedisResult, len(cmds))
	queued := -1
	for i, cmd := range cmds {
		args := cmd.Commands()
		s.sent = append(s.sent, args)
		switch name := strings.ToUpper(args[0]); {
		case name == "MULTI":
			res[i], queued = ok(), 0
		case name == "EXEC":
			oks := make([]rueidis.RedisMessage, queued)
			for j := range oks {
				oks[j] = mock.RedisString("OK")
			}
			res[i], queued = mock.Result(mock.RedisArray(oks...)), -1
		case queued >= 0:
			res[i] = mock.Result(mock.RedisString("QUEUED"))
			queued++
		case name == "GET":
			if v, found := s.values[args[1]]; found {
				res[i] = mock.Result(mock.RedisBlobString(v))
			} else {
				res[i] = mock.Result(mock.RedisNil())
			}
		case name == "TIME":
			res[i] = timeReply(1_000_000)
		default:
			res[i] = ok()
		}
	}
	return res
}

// committed is the SETs the server got inside a MULTI.
func (s *fakeServer) committed() []string { return slices.Concat(s.transactions()...) }

// transactions are the SETs of each MULTI the server got.
func (s *fakeServer) transactions() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	var in []string
	for _, args := range s.sent {
		switch args[0] {
		case "MULTI":
			in = []string{}
		case "EXEC":
			if len(in) > 0 {
				out = append(out, in)
			}
			in = nil
		case "SET":
			if in != nil {
				in = append(in, args[1]+"="+args[2])
			}
		}
	}
	return out
}

// engineOn is a default engine on s, whose ops are refused by refuse.
func engineOn(t *testing.T, s *fakeServer, d *testDomain) *Engine[string, testTrip] {
	ctrl := gomock.NewController(t)
	client := mock.NewClient(ctrl)
	client.EXPECT().Dedicate().DoAndReturn(func() (rueidis.DedicatedClient, func()) { return s.conn(ctrl), func() {} }).AnyTimes()
	return New[string, testTrip](d, Config{Client: client, Policy: txn.Policy{MaxAttempts: 3}})
}

// refuseValue refuses an op whose subject reads v.
func refuseValue(v string) func(*testOp, rueidis.RedisResult) error {
	return func(_ *testOp, r rueidis.RedisResult) error {
		if got, _ := r.ToString(); got == v {
			return errRefused
		}
		return nil
	}
}

func newOp(mode, worker, subject string) *testOp {
	return &testOp{Mode: mode, Subject: subject, Claim: sched.Claims{Worker: worker, Unit: subject, Stream: "s", Entry: subject}}
}

// A lone op commits what it decided, in a MULTI of its own.
func TestDoCommitsTheDecision(t *testing.T) {
	s := &fakeServer{values: map[string]string{}}
	e := engineOn(t, s, &testDomain{})
	require.NoError(t, e.Do(context.Background(), newOp("first", "w1", "u1")))
	assert.Equal(t, []string{"u1=first"}, s.committed())
}

// A refusal on fresh reads stands: nothing is committed, and the
// connection, still watching, is kept for the worker's next transition
// (Domain.KeepAfter).
func TestDoRefusalOnFreshReadsStands(t *testing.T) {
	s := &fakeServer{values: map[string]string{"u1": "gone"}}
	e := engineOn(t, s, &testDomain{refuse: refuseValue("gone")})
	require.ErrorIs(t, e.Do(context.Background(), newOp("first", "w1", "u1")), errRefused)
	assert.Empty(t, s.committed())
	assert.NotNil(t, e.watches.take("w1", "after"), "the refused transition's connection is kept watching")
}

// A refusal is never decided on kept reads: the op refused on them reads
// afresh, and commits on what it finds.
func TestDoRefusalOnKeptReadsStartsOver(t *testing.T) {
	s := &fakeServer{values: map[string]string{"u1": "fine"}}
	d := &testDomain{refuse: refuseValue("gone")}
	e := engineOn(t, s, d)
	op := newOp("first", "w1", "u1")
	old := &fakeServer{}
	keptConn := old.conn(gomock.NewController(t))
	p := &prefetch[string, testTrip]{trip: testTrip{ops: 1}, kept: true}
	p.on = txn.Held[Conn]{Conn: keptConn, Release: func() {}, Replies: []rueidis.RedisResult{ok(), mock.Result(mock.RedisBlobString("gone"))}}
	e.kept.trips.Put("w1", &keptTrip[string, testTrip]{p: p, claim: op.Claim, mode: "first"})

	require.NoError(t, e.Do(context.Background(), op))
	assert.Len(t, d.arrived, 2, "decided on the kept reads, then on fresh ones")
	assert.Equal(t, []string{"u1=first"}, s.committed())
	assert.True(t, slices.ContainsFunc(old.sent, func(a []string) bool { return a[0] == "UNWATCH" }),
		"the kept connection goes back disarmed")
}
