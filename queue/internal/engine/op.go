package engine

import (
	"context"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/sched"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// Conn is a dedicated connection: a WATCH stays armed on it.
type Conn = rueidis.DedicatedClient

// Txn is one attempt of a commit (see txn.Txn).
type Txn = txn.Txn[machinery.GuardRecord]

// Attempt is one optimistic try of a transition: on c it WATCHes its
// guards, reads, decides, and returns the writes to commit (nil: nothing
// to commit, the decision is final), with t.Now set. The runner adds
// MULTI, EXEC and the token write on the acting worker's guard.
type Attempt = txn.Attempt[Conn, machinery.GuardRecord]

// Behind is what a commit carries behind its EXEC (see txn.Behind).
type Behind = txn.Behind[Conn]

// Op is one fenced transition of subject S (the reservation it acts on)
// waiting for, or taken into, a batch. T is the Domain's shape of a
// batch's first round trip.
type Op[S, T any] struct {
	Mode    string
	Subject S
	// Claim names what the op decides on and writes, for the scheduler;
	// Claim.Tail: it may requeue, which only one batch in flight may.
	Claim sched.Claims
	// Plan is the Domain's decision of the op (Domain.Decide reads it).
	Plan any
	// Err is the op's outcome: its refusal, or the commit's error.
	Err error

	ctx  context.Context
	wake chan wakeup[S, T]
	// chain is how the batch this op leads carries the next one (see
	// chain.go), kept here so that it costs no allocation of its own.
	chain chained[S, T]
}

// Claims is the op's claim, for the scheduler's rules.
func (o *Op[S, T]) Claims() sched.Claims { return o.Claim }

// Domain is what the engine needs of the transitions: the shape and the
// commands of a batch's first round trip, and the decisions on its
// replies. None of it knows where the replies came from.
type Domain[S, T any] interface {
	// Trip plans the first round trip of ops.
	Trip(ops []*Op[S, T]) T
	// AppendTrip appends that round trip, shaped as tr: a WATCH first.
	AppendTrip(cmds rueidis.Commands, c Conn, ops []*Op[S, T], tr T) rueidis.Commands
	// SameTrip tells whether a kept trip has the shape of own.
	SameTrip(kept, own T) bool
	// Decide takes every op's decision on res, the replies of the trip
	// shaped as tr that arrived at mono time arrived: each op's Err is its
	// refusal, or nil, and the writes of all of them (appended to
	// t.Writes) are returned, with t.Now set. An error is the whole
	// batch's.
	Decide(ctx context.Context, c Conn, t *Txn, ops []*Op[S, T], tr T, res []rueidis.RedisResult, arrived time.Duration) (rueidis.Commands, error)
	// WorkerGuard is the guard key of worker.
	WorkerGuard(worker string) string
	// Renew appends the build's TTL renewal to writes.
	Renew(c Conn, writes rueidis.Commands) rueidis.Commands
	// Carried is what the commit of batch carries behind its EXEC before
	// anything else (a worker's read-ahead); nil: nothing.
	Carried(batch []*Op[S, T]) Behind
	// NextMode is the transition a worker likely calls after mode on the
	// same subject ("": none worth reading for); Settles tells the modes
	// after which it holds the subject no more.
	NextMode(mode string) string
	Settles(mode string) bool
	// KeepAfter is the transition a worker whose lone transition was
	// refused with err calls next, on its watching connection; "": none.
	KeepAfter(err error) string
}
