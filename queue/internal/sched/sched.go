// Package sched orders a build's fenced transitions into batches
// (docs/design.md#batching): which of them share one transaction, which
// wait, and which batch a commit carries behind its EXEC
// (docs/design.md#chaining). It is pure logic, with no I/O: an op is
// known by what it decides on and writes.
//
// The rules:
//
//   - no two ops of one worker, unit or entry in one batch, nor in flight
//     at once: each is decided on reads taken before any of them wrote, a
//     worker's transitions commit in the order they were called, and
//     batches of one build never abort each other;
//   - an op waits behind a waiting op of its own worker, unit or entry;
//   - only one batch in flight holds ops that may requeue (Claims.Tail);
//   - a batch holds up to MaxBatch ops, in arrival order, and up to
//     MaxLanes batches are in flight, one more while a commit carries the
//     next batch behind its EXEC.
package sched

import (
	"slices"
	"sync"
)

// Claims is what one op decides on and writes.
type Claims struct {
	Worker, Unit  string
	Stream, Entry string // the entry, in its stream
	// Tail: the op may put its unit back on the priority stream, so its
	// batch watches the tail guard: only one batch in flight holds such
	// ops, so that a build's requeues never race each other on the tail.
	Tail bool
}

// Op is one op to schedule, known by its claims.
type Op interface {
	comparable
	Claims() Claims
}

// Limits bound the batches.
type Limits struct {
	MaxBatch int // ops of one batch
	MaxLanes int // batches in flight
}

// key is one thing an op decides on and writes: its worker, its unit or
// its entry. Kept apart by kind, compared without building a string.
type key struct {
	kind     byte // 'w', 'u' or 'e'
	id       string
	streamOf string // the entry's stream
}

func (c Claims) keys() [3]key {
	return [3]key{{kind: 'w', id: c.Worker}, {kind: 'u', id: c.Unit}, {kind: 'e', id: c.Entry, streamOf: c.Stream}}
}

// Scheduler queues a build's ops behind its batches in flight. Safe for
// concurrent use.
type Scheduler[T Op] struct {
	limits   Limits
	mu       sync.Mutex
	pending  []T
	lanes    int  // batches in flight
	tailBusy bool // one of them holds ops with Tail set
	// busy counts the workers, units and entries of the ops in flight.
	busy map[key]int
}

// New is a scheduler of batches bounded by l.
func New[T Op](l Limits) *Scheduler[T] {
	return &Scheduler[T]{limits: l, busy: map[key]int{}}
}

// Start opens a batch led by op when op may lead one now (a lane free,
// nothing of its own in flight or waiting): op first, then the waiting ops
// that can share its transaction. Else op waits, and Start returns nil:
// a later Finish or Follow hands it its batch. queued, when not nil, is
// called on op when it is to wait, before anyone else can take it.
func (s *Scheduler[T]) Start(op T, queued func(T)) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lanes < s.limits.MaxLanes && s.mayLead(op.Claims()) && !s.waiting(op.Claims()) {
		return s.open(op)
	}
	if queued != nil {
		queued(op)
	}
	s.pending = append(s.pending, op)
	return nil
}

// StartAlone opens a batch of op alone, whatever the lanes, when nothing
// of its own is in flight or waiting; nil: op must go through Start. It is
// for an op that commits on a connection it already holds, watching its
// guards (kept reads): its commit costs one round trip and shares nothing,
// so it need not wait for a lane, and its reads, given back while it
// waited, would cost the server their work and one more command.
func (s *Scheduler[T]) StartAlone(op T) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := op.Claims()
	if !s.mayLead(c) || s.waiting(c) {
		return nil
	}
	s.lanes++
	s.tailBusy = s.tailBusy || c.Tail
	batch := []T{op}
	s.mark(batch, 1)
	return batch
}

// Withdraw takes op off the queue, for a caller that gave up waiting. false:
// op was already taken into a batch, which runs it.
func (s *Scheduler[T]) Withdraw(op T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(s.pending, op)
	if i < 0 {
		return false
	}
	s.pending = slices.Delete(s.pending, i, i+1)
	return true
}

// Finish gives back the lane of batch, done, and opens a batch for each
// waiting op there is now room for, in order; each is led by its first op.
func (s *Scheduler[T]) Finish(batch []T) [][]T {
	tail := false
	for _, o := range batch {
		tail = tail || o.Claims().Tail
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lanes--
	s.mark(batch, -1)
	if tail {
		s.tailBusy = false
	}
	var leaders [][]T
	for s.lanes < s.limits.MaxLanes {
		i := s.nextLeader(false)
		if i < 0 {
			break
		}
		leaders = append(leaders, s.take(i))
	}
	return leaders
}

// Follow opens the batch a commit about to be sent carries behind its
// EXEC, taken off the queue; nil when no waiting op can lead a batch now.
// It may open one lane over MaxLanes: the batch it carries takes over the
// lane of the one committing, which gives it back as soon as its EXEC's
// reply is in.
func (s *Scheduler[T]) Follow() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lanes > s.limits.MaxLanes {
		return nil
	}
	i := s.nextLeader(true)
	if i < 0 {
		return nil
	}
	return s.take(i)
}

// take opens the batch led by the i-th waiting op. s.mu is held.
func (s *Scheduler[T]) take(i int) []T {
	first := s.pending[i]
	s.pending = slices.Delete(s.pending, i, i+1)
	return s.open(first)
}
