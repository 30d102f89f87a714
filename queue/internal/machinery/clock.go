package machinery

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// Workers on many machines must agree on time, so the times a transition
// writes (an event's at_ms, a worker's last_seen, a requeued entry's id)
// are the server's, never the client's wall clock. Asking the server costs
// a TIME in the round trip before the commit; a Clock lets a Build
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
// is bounded by ClockMaxAge (50 microseconds at the 50 ppm a quartz clock
// may drift). An anchor older than ClockMaxAge is never used: the
// caller then fetches a TIME first. See docs/design.md#clock.
//
// What the clock tells never goes backwards, whatever the replies say (a
// failover to a server whose clock is behind, a reply older than the
// anchor): the times one worker's transitions stamp through a Build keep
// their order. It is safe for concurrent use.

// ClockMaxAge is the oldest anchor a Clock tells time from.
const ClockMaxAge = time.Second

// ClockRefresh is the anchor's age past which a Build carries a TIME on
// its next round trip that reads anyway, so that under steady traffic the
// anchor is never older than ClockMaxAge when it is used.
const ClockRefresh = 250 * time.Millisecond

// monoStart is the origin of MonotonicNow: time.Since reads the monotonic
// clock, which wall clock steps do not move.
var monoStart = time.Now()

func MonotonicNow() time.Duration { return time.Since(monoStart) }

// Clock is the server's time as a Build knows it.
type Clock struct {
	mono func() time.Duration // the local monotonic clock

	mu       sync.Mutex
	anchored bool
	anchorMS int64         // the latest TIME reply, epoch milliseconds
	anchorAt time.Duration // mono() when it was read
	lastMS   int64         // the latest time told: never tell less
	// fresh: the inline engine's clock, which holds no anchor: each
	// decision tells time by a TIME reply of its own.
	Fresh bool
}

func NewClock(mono func() time.Duration) *Clock {
	return &Clock{mono: mono}
}

// Anchor records a TIME reply of serverMS, read off the wire at mono time
// at. A reply older than the anchor it would replace is ignored: the clock
// only ever moves to a newer reading, so a reply used after it waited (a
// kept read, chaining) counts as old as it is, never as fresh.
func (c *Clock) Anchor(serverMS int64, at time.Duration) {
	if c.Fresh {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.anchored && at < c.anchorAt {
		return
	}
	c.anchored, c.anchorMS, c.anchorAt = true, serverMS, at
}

// TimeTrip sends cmds on conn and tells when their replies arrived: the
// moment a TIME among them is anchored at.
func (c *Clock) TimeTrip(ctx context.Context, conn rueidis.DedicatedClient, cmds ...rueidis.Completed) ([]rueidis.RedisResult, time.Duration) {
	res := conn.DoMulti(ctx, cmds...)
	return res, c.mono()
}

// Now tells the server's time in epoch milliseconds; ok is false when no
// anchor is at most ClockMaxAge old, and the caller must fetch a TIME.
func (c *Clock) Now() (ms int64, ok bool) {
	if c.Fresh {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	age := c.mono() - c.anchorAt
	if !c.anchored || age > ClockMaxAge || age < 0 {
		return 0, false
	}
	ms = max(c.anchorMS+age.Milliseconds(), c.lastMS)
	c.lastMS = ms
	return ms, true
}

// Due tells whether the next round trip that reads should carry a TIME:
// there is no anchor, or it is older than ClockRefresh.
func (c *Clock) Due() bool {
	if c.Fresh {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.anchored || c.mono()-c.anchorAt > ClockRefresh
}

// Mono reads the clock's local monotonic clock: when a round trip was
// sent, or its replies arrived.
func (c *Clock) Mono() time.Duration { return c.mono() }

// ServerNow is the server's time for a decision taken on connection conn:
// the clock's, or, when its anchor is too old, that of a TIME fetched on
// conn, one more round trip, which anchors the clock anew however long it
// took: it is the freshest reading there is.
func (c *Clock) ServerNow(ctx context.Context, conn rueidis.DedicatedClient) (int64, error) {
	if ms, ok := c.Now(); ok {
		return ms, nil
	}
	res, arrived := c.TimeTrip(ctx, conn, conn.B().Time().Build())
	ms, err := ParseTime(res[0])
	if err != nil {
		return 0, err
	}
	c.Anchor(ms, arrived)
	if c.Fresh {
		return ms, nil
	}
	if told, ok := c.Now(); ok {
		return told, nil
	}
	return ms, nil
}

// AnchoredNow anchors the clock on the TIME reply r, which arrived at
// mono time arrived, and tells the time from it: r's time, or later when the clock already told
// later. The inline engine's clock tells r's time.
func (c *Clock) AnchoredNow(ctx context.Context, conn rueidis.DedicatedClient, r rueidis.RedisResult, arrived time.Duration) (int64, error) {
	ms, err := ParseTime(r)
	if err != nil {
		return 0, err
	}
	if c.Fresh {
		return ms, nil
	}
	c.Anchor(ms, arrived)
	return c.ServerNow(ctx, conn)
}

// ParseTime reads a TIME reply as epoch milliseconds: workers on many
// machines must agree on time, so it never comes from a client's clock.
func ParseTime(r rueidis.RedisResult) (int64, error) {
	parts, err := r.AsStrSlice()
	if err != nil || len(parts) != 2 {
		return 0, fmt.Errorf("queue: TIME reply %v: %w", parts, err)
	}
	sec, err1 := strconv.ParseInt(parts[0], 10, 64)
	usec, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("queue: TIME reply %v is not numeric", parts)
	}
	return sec*1000 + usec/1000, nil
}
