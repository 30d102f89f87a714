package queue

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// Workers on many machines must agree on time, so the times a transition
// writes (an event's at_ms, a worker's last_seen, a requeued entry's id)
// are the server's, never the client's wall clock. Asking the server costs
// a TIME in the round trip before the commit; a serverClock lets a Build
// ask less often. It holds the latest TIME reply the Build read (its
// anchor) and the client's monotonic time when it read it, and tells the
// server's time as the anchor plus the monotonic time elapsed since: the
// local clock measures only the short span since the anchor, never the
// time of day.
//
// Error bound: a TIME reply leaves the server some time before the client
// reads it, at most the round trip that carried it, so the estimate lags
// the server's clock by at most one round trip, plus the drift of the
// local monotonic clock against the server's over the anchor's age, which
// is bounded by clockMaxAge (50 microseconds at the 50 ppm a quartz clock
// may drift). An anchor older than clockMaxAge is never used: the
// caller then fetches a TIME first. See docs/design.md#clock.
//
// What the clock tells never goes backwards, whatever the replies say (a
// failover to a server whose clock is behind, a reply older than the
// anchor): the times one worker's transitions stamp through a Build keep
// their order. It is safe for concurrent use.

// clockMaxAge is the oldest anchor a serverClock tells time from.
const clockMaxAge = time.Second

// clockMaxTrip is the longest round trip whose TIME reply anchors the
// clock: the reply left the server somewhere within it, so an anchor may
// lag the server by that much.
const clockMaxTrip = 100 * time.Millisecond

// clockRefresh is the anchor's age past which a Build carries a TIME on
// its next round trip that reads anyway, so that under steady traffic the
// anchor is never older than clockMaxAge when it is used.
const clockRefresh = 250 * time.Millisecond

// monoStart is the origin of monotonicNow: time.Since reads the monotonic
// clock, which wall clock steps do not move.
var monoStart = time.Now()

func monotonicNow() time.Duration { return time.Since(monoStart) }

// serverClock is the server's time as a Build knows it.
type serverClock struct {
	mono func() time.Duration // the local monotonic clock

	mu       sync.Mutex
	anchored bool
	anchorMS int64         // the latest TIME reply, epoch milliseconds
	anchorAt time.Duration // mono() when it was read
	lastMS   int64         // the latest time told: never tell less
	// fresh: the inline engine's clock, which holds no anchor: each
	// decision tells time by a TIME reply of its own (engine.go).
	fresh bool
}

func newServerClock(mono func() time.Duration) *serverClock {
	return &serverClock{mono: mono}
}

// anchor records a TIME reply of serverMS, read off the wire at mono time
// at. A reply older than the anchor it would replace is ignored: the clock
// only ever moves to a newer reading, so a reply used after it waited (a
// kept read, chaining) counts as old as it is, never as fresh.
func (c *serverClock) anchor(serverMS int64, at time.Duration) {
	if c.fresh {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.anchored && at < c.anchorAt {
		return
	}
	c.anchored, c.anchorMS, c.anchorAt = true, serverMS, at
}

// anchorTrip records a TIME reply carried by the round trip tr. A round
// trip longer than clockMaxTrip leaves too wide a span for when the server
// answered (a worker paused while the reply waited in its socket, a
// saturated link): its reply anchors nothing, and the clock tells time
// from an earlier anchor, or the caller fetches a TIME of its own.
func (c *serverClock) anchorTrip(serverMS int64, tr trip) {
	if tr.arrived-tr.sent > clockMaxTrip {
		return
	}
	c.anchor(serverMS, tr.arrived)
}

// trip is when a round trip was sent and when its replies arrived, on the
// local monotonic clock.
type trip struct{ sent, arrived time.Duration }

// timeTrip sends cmds on c and tells when: the times a TIME among them
// anchors the clock by.
func (c *serverClock) timeTrip(ctx context.Context, conn rueidis.DedicatedClient, cmds ...rueidis.Completed) ([]rueidis.RedisResult, trip) {
	sent := c.mono()
	res := conn.DoMulti(ctx, cmds...)
	return res, trip{sent: sent, arrived: c.mono()}
}

// now tells the server's time in epoch milliseconds; ok is false when no
// anchor is at most clockMaxAge old, and the caller must fetch a TIME.
func (c *serverClock) now() (ms int64, ok bool) {
	if c.fresh {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	age := c.mono() - c.anchorAt
	if !c.anchored || age > clockMaxAge || age < 0 {
		return 0, false
	}
	ms = max(c.anchorMS+age.Milliseconds(), c.lastMS)
	c.lastMS = ms
	return ms, true
}

// due tells whether the next round trip that reads should carry a TIME:
// there is no anchor, or it is older than clockRefresh.
func (c *serverClock) due() bool {
	if c.fresh {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.anchored || c.mono()-c.anchorAt > clockRefresh
}

// serverNow is the server's time for a decision taken on connection c: the
// clock's, or, when its anchor is too old, that of a TIME fetched on c,
// one more round trip, which anchors the clock anew however long it took:
// it is the freshest reading there is.
func (b *Build) serverNow(ctx context.Context, c rueidis.DedicatedClient) (int64, error) {
	if ms, ok := b.clock.now(); ok {
		return ms, nil
	}
	res, tr := b.clock.timeTrip(ctx, c, c.B().Time().Build())
	ms, err := nowMS(res[0])
	if err != nil {
		return 0, err
	}
	b.clock.anchor(ms, tr.arrived)
	if b.clock.fresh {
		return ms, nil
	}
	if told, ok := b.clock.now(); ok {
		return told, nil
	}
	return ms, nil
}

// tripNow is the server's time for the decisions of a batch whose first
// round trip tr replied res: the TIME it carried anchors the clock first.
func (b *Build) tripNow(ctx context.Context, c rueidis.DedicatedClient, shape batchTrip, res []rueidis.RedisResult, tr trip) (int64, error) {
	if shape.time {
		return b.anchoredNow(ctx, c, res[2], tr)
	}
	return b.serverNow(ctx, c)
}

// anchoredNow anchors the clock on the TIME reply r of round trip tr and
// tells the time from it: r's time, or later when the clock already told
// later.
func (b *Build) anchoredNow(ctx context.Context, c rueidis.DedicatedClient, r rueidis.RedisResult, tr trip) (int64, error) {
	ms, err := nowMS(r)
	if err != nil {
		return 0, err
	}
	if b.clock.fresh {
		return ms, nil
	}
	b.clock.anchorTrip(ms, tr)
	return b.serverNow(ctx, c)
}
