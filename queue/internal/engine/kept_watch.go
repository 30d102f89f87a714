package engine

import (
	"context"
	"sync"

	"github.com/hopper-queue/hopper/queue/internal/fencing"
	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// Some transitions decide nothing on what they read beyond the worker's
// own record and meta (WorkerPlan): Liveness, which an idle worker calls
// after a reservation that gave nothing, and the prebuilt events, which a
// worker calls after a settlement was refused. Each needs its worker guard
// WATCHed before its commit, in a round trip whose reply came back: a
// WATCH sent in the same write as its EXEC could reach the server after a
// lost-reply resolution wrote the guard, and the commit would then apply
// after it was declared lost.
//
// So the round trip before them keeps the connection, still watching, for
// the worker (a keptWatch): the blocking read of a worker whose last
// reservation gave nothing WATCHes the worker guard and makes the next
// transition's reads, in the same write (ReadWatching); a lone transition
// refused on fresh reads keeps its own connection, which watches the
// worker guard since before them (keepRefused). The transition then
// commits in one round trip. Its EXEC aborts if the guard moved since, and
// it falls back to the two round trips. A refusal is never decided on kept
// reads (onKept). A kept connection not used within machinery.KeptMaxAge
// is given back, disarmed, by a timer.

// keptWatches holds, per worker, a connection watching its guard, and
// which workers' last reservation gave nothing.
type keptWatches struct {
	conns machinery.Slots[*keptWatch]
	mu    sync.Mutex // guards idle
	idle  map[string]bool
	off   bool // the inline engine's: nothing is kept
}

// keptWatch is one worker's kept connection, for the transition mode.
type keptWatch struct {
	held txn.Held[Conn]
	mode string
}

func (kw *keptWatch) Drop() { kw.held.Drop() }

// put keeps h for worker's next transition, mode, giving back what the
// worker held before.
func (k *keptWatches) put(worker, mode string, h txn.Held[Conn]) {
	k.conns.Put(worker, &keptWatch{held: h, mode: mode})
}

// take removes and returns the connection kept for worker's transition
// mode, when fresh; another one is given back. nil: none.
func (k *keptWatches) take(worker, mode string) *txn.Held[Conn] {
	kw, ok := k.conns.Take(worker)
	if !ok {
		return nil
	}
	if kw.mode != mode {
		go kw.Drop()
		return nil
	}
	if !fencing.EntryGuards {
		txn.Unwatch(kw.held.Conn) // the unfenced build: see package fencing
	}
	return &kw.held
}

// Gave records whether worker's reservation gave something: one that gave
// nothing makes its next blocking read a watched one (ReadWatching).
func (e *Engine[S, T]) Gave(worker string, some bool) {
	k := &e.watches
	if k.off {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case some:
		delete(k.idle, worker)
	case k.idle == nil:
		k.idle = map[string]bool{worker: true}
	default:
		k.idle[worker] = true
	}
}

// WasIdle tells whether worker's last reservation gave nothing.
func (e *Engine[S, T]) WasIdle(worker string) bool {
	k := &e.watches
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.idle[worker]
}

// ReadWatching is the blocking read of an idle worker: on a connection of
// its own, behind a WATCH of the worker guard and reads, the reads of the
// transition mode it likely calls next; then read; then a TIME, which
// anchors the clock at the moment the replies arrived. It gives the
// replies of reads and of read. When every reply came back and read
// delivered nothing, the connection is kept for the worker's mode. !ok:
// read itself failed (a redirect, which a dedicated connection does not
// follow; a broken connection) and delivered nothing: the caller reads as
// it would without a kept watch. A read that delivered entries is ok
// whatever became of the replies around it: its entries are pending under
// the worker, and reading again would strand them there.
func (e *Engine[S, T]) ReadWatching(ctx context.Context, worker, mode string, reads func(Conn) rueidis.Commands, read rueidis.Completed) (replies []rueidis.RedisResult, got rueidis.RedisResult, ok bool) {
	c, release := e.client.Dedicate()
	cmds := append(rueidis.Commands{c.B().Watch().Key(e.domain.WorkerGuard(worker)).Build()}, reads(c)...)
	res := c.DoMulti(ctx, append(cmds, read, c.B().Time().Build())...)
	n := len(res)
	replies, got = res[1:n-2], res[n-2]
	if ms, err := machinery.ParseTime(res[n-1]); err == nil {
		// The TIME ran once the wait was over, right before the replies
		// came back: the round trip's length is the wait's, not doubt.
		e.Clock.Anchor(ms, e.Clock.Mono())
	}
	if !answered(got) {
		go (&txn.Held[Conn]{Conn: c, Release: release, Replies: res}).Drop()
		return replies, got, false
	}
	h := txn.Held[Conn]{}
	if allAnswered(res) && rueidis.IsRedisNil(got.Error()) && h.Arrived(c, release, res[:n-2]) {
		e.watches.put(worker, mode, h)
		return replies, got, true
	}
	go (&txn.Held[Conn]{Conn: c, Release: release, Replies: res}).Drop()
	return replies, got, true
}

// answered tells whether a reply is an answer: a value, or nil for none.
func answered(got rueidis.RedisResult) bool {
	err := got.Error()
	return err == nil || rueidis.IsRedisNil(err)
}

// allAnswered tells whether every reply is an answer.
func allAnswered(res []rueidis.RedisResult) bool {
	for _, r := range res {
		if !answered(r) {
			return false
		}
	}
	return true
}
