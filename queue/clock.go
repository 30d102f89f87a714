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
}

func newServerClock(mono func() time.Duration) *serverClock {
	return &serverClock{mono: mono}
}

// anchor records a TIME reply of serverMS, read just now.
func (c *serverClock) anchor(serverMS int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.mono() // under the lock: no anchor is ever newer than a reading
	c.anchored, c.anchorMS, c.anchorAt = true, serverMS, at
}

// now tells the server's time in epoch milliseconds; ok is false when no
// anchor is at most clockMaxAge old, and the caller must fetch a TIME.
func (c *serverClock) now() (ms int64, ok bool) {
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
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.anchored || c.mono()-c.anchorAt > clockRefresh
}

// serverNow is the server's time for a decision taken on connection c: the
// clock's, or, when its anchor is too old, that of a TIME fetched on c,
// one more round trip, which anchors the clock anew.
func (b *Build) serverNow(ctx context.Context, c rueidis.DedicatedClient) (int64, error) {
	if ms, ok := b.clock.now(); ok {
		return ms, nil
	}
	ms, err := nowMS(c.Do(ctx, c.B().Time().Build()))
	if err != nil {
		return 0, err
	}
	b.clock.anchor(ms)
	if told, ok := b.clock.now(); ok {
		return told, nil
	}
	return ms, nil
}

// tripNow is the server's time for the decisions of a batch whose first
// round trip replied res: the TIME it carried anchors the clock first.
func (b *Build) tripNow(ctx context.Context, c rueidis.DedicatedClient, tr batchTrip, res []rueidis.RedisResult) (int64, error) {
	if tr.time {
		return b.anchoredNow(ctx, c, res[2])
	}
	return b.serverNow(ctx, c)
}

// anchoredNow anchors the clock on the TIME reply r, just read, and tells
// the time from it: r's time, or later when the clock already told later.
func (b *Build) anchoredNow(ctx context.Context, c rueidis.DedicatedClient, r rueidis.RedisResult) (int64, error) {
	ms, err := nowMS(r)
	if err != nil {
		return 0, err
	}
	b.clock.anchor(ms)
	return b.serverNow(ctx, c)
}
