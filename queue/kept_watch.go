package queue

import (
	"context"
	"sync"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/txn"
	"github.com/redis/rueidis"
)

// Two transitions decide nothing on what they read beyond the worker's own
// record and meta: Liveness, which an idle worker calls after a
// reservation that gave nothing, and AppendPrebuilt, which a worker calls
// with stale_rejected after a settlement was refused STALE. Each needs
// its worker guard WATCHed before its commit, in a round trip whose reply
// came back: a WATCH sent in the same write as its EXEC could reach the
// server after a lost-reply resolution wrote the guard, and the commit
// would then apply after it was declared lost.
//
// So the round trip before them keeps the connection, still watching, for
// the worker (a keptWatch): the blocking units read of a worker whose
// last reservation gave nothing WATCHes the worker guard and reads what
// Liveness reads, in the same write; a lone settlement refused STALE
// keeps its own connection, which watches the worker guard since before
// its fresh reads. The transition then commits in one round trip. Its
// EXEC aborts if the guard moved since, and it falls back to the two
// round trips. A refusal (CORRUPT) is never decided on kept reads. A kept
// connection not used within machinery.KeptMaxAge is given back, disarmed, by a
// timer. See docs/design.md#kept-watches.

// keptWatches holds, per worker, a connection watching its guard, and
// which workers' last reservation gave nothing.
type keptWatches struct {
	conns machinery.Slots[*keptWatch]
	mu    sync.Mutex // guards idle
	idle  map[string]bool
	off   bool // the inline engine's: no idle worker's read is watched (engine.go)
}

// keptWatch is one worker's kept connection, for the transition mode.
type keptWatch struct {
	held txn.Held[rueidis.DedicatedClient]
	mode string
}

func (kw *keptWatch) Drop() { kw.held.Drop() }

// put keeps h for worker's next transition, mode, giving back what the
// worker held before.
func (k *keptWatches) put(worker, mode string, h txn.Held[rueidis.DedicatedClient]) {
	k.conns.Put(worker, &keptWatch{held: h, mode: mode})
}

// take removes and returns the connection kept for worker's transition
// mode, when fresh; another one is given back. nil: none.
func (k *keptWatches) take(worker, mode string) *txn.Held[rueidis.DedicatedClient] {
	kw, ok := k.conns.Take(worker)
	if !ok {
		return nil
	}
	if kw.mode != mode {
		go kw.Drop()
		return nil
	}
	if !entryGuards {
		txn.Unwatch(kw.held.Conn) // the unfenced build: see keys.go
	}
	return &kw.held
}

// gave records whether worker's reservation gave something.
func (k *keptWatches) gave(worker string, some bool) {
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

// wasIdle tells whether worker's last reservation gave nothing.
func (k *keptWatches) wasIdle(worker string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.idle[worker]
}

// readUnitsWatching is the blocking units read of an idle worker: on a
// connection of its own, behind a WATCH of the worker guard and
// Liveness's reads, and followed by a TIME, which anchors the clock at
// the moment the replies arrived. It gives the replies of meta's state
// and of the read. When every reply came back and the read delivered
// nothing, the connection is kept for the worker's Liveness. !ok: the
// read itself failed (a redirect, which a dedicated connection does not
// follow; a broken connection) and delivered nothing: the caller reads as
// it would without a kept watch. A read that delivered entries is ok
// whatever became of the replies around it: its entries are pending under
// the worker, and reading again would strand them there.
func (e *engine) readUnitsWatching(ctx context.Context, worker string, read rueidis.Completed) (meta, got rueidis.RedisResult, ok bool) {
	c, release := e.client.Dedicate()
	cmds := append(rueidis.Commands{c.B().Watch().Key(e.schema.workerGuard(worker)).Build()}, e.schema.livenessReads(c, worker)...)
	res := c.DoMulti(ctx, append(cmds, read, c.B().Time().Build())...)
	n := len(res)
	meta, got = res[1], res[n-2]
	if ms, err := machinery.ParseTime(res[n-1]); err == nil {
		// The TIME ran once the wait was over, right before the replies
		// came back: the round trip's length is the wait's, not doubt.
		e.clock.Anchor(ms, e.clock.Mono())
	}
	if !readDelivered(got) {
		go (&txn.Held[rueidis.DedicatedClient]{Conn: c, Release: release, Replies: res}).Drop()
		return meta, got, false
	}
	h := txn.Held[rueidis.DedicatedClient]{}
	if allReplied(res) && rueidis.IsRedisNil(got.Error()) && h.Arrived(c, release, res[:n-2]) {
		e.watches.put(worker, ModeLiveness, h)
		return meta, got, true
	}
	go (&txn.Held[rueidis.DedicatedClient]{Conn: c, Release: release, Replies: res}).Drop()
	return meta, got, true
}

// readDelivered tells whether a stream read's reply is an answer: entries,
// or nil for none.
func readDelivered(got rueidis.RedisResult) bool {
	err := got.Error()
	return err == nil || rueidis.IsRedisNil(err)
}

// allReplied tells whether every reply is an answer (nil counts: no
// record yet, nothing read).
func allReplied(res []rueidis.RedisResult) bool {
	for _, r := range res {
		if !readDelivered(r) {
			return false
		}
	}
	return true
}

// keepRefused is the Final of a batch's commit (see txn.Link): a lone
// transition refused STALE on fresh reads keeps its connection, still
// watching its worker guard, for the stale_rejected its worker appends
// next.
func (e *engine) keepRefused(ops []*fencedOp) func(rueidis.DedicatedClient, func()) bool {
	if len(ops) != 1 || e.watches.off {
		return nil
	}
	return func(c rueidis.DedicatedClient, release func()) bool {
		op := ops[0]
		if !isStale(op.err) {
			return false
		}
		e.watches.put(op.r.WorkerID, modePrebuilt, txn.Held[rueidis.DedicatedClient]{Conn: c, Release: release, Replies: []rueidis.RedisResult{}})
		return true
	}
}
