package txn

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// A connection has no WATCH armed once its EXEC has run, so a commit's
// write can carry, behind the EXEC, commands that need nothing from it:
// the first round trip of the batch after it (chaining), of the worker's
// likely next transition (kept reads), or any other read. Each is a
// Behind: asked right before each commit what it sends, and handed its
// own replies, in order, once they are in. See docs/design.md#chaining.

// Link ties a commit to what runs before and after it on one connection.
type Link[C Conn] struct {
	// From is the commit's first round trip, already made behind the EXEC
	// of another commit; nil: none.
	From *Held[C]
	// Behind are sent, in order, behind each commit's EXEC.
	Behind []Behind[C]
	// Final, when set, is offered c, still watching, when an attempt
	// decides there is nothing to commit: holds, it keeps c, which
	// release gives back; else the runner disarms c and gives it back.
	// A refusal's WATCH can serve a transition that decides nothing on
	// what was read (docs/design.md#kept-watches).
	Final func(c C, release func()) (holds bool)
}

// Behind is what a commit carries behind its EXEC, in the same write.
type Behind[C Conn] interface {
	// Carry returns the commands to send behind the EXEC about to go on
	// c; none: nothing this time. It is asked once per commit sent.
	Carry(c C) rueidis.Commands
	// Arrived hands over the replies of what Carry returned, with the
	// commit's outcome (see ExecOutcome). holds: it keeps c, which release
	// gives back; only the Behind whose commands leave a WATCH armed on c
	// may, and at most one does. A reply lost with the connection leaves c
	// with the runner, who gives it back broken.
	Arrived(c C, release func(), res []rueidis.RedisResult, commit error) (holds bool)
}

// carry appends to cmds the commands of each of behind, and to out those
// that carry something this time, with their number of commands.
func carry[C Conn](c C, behind []Behind[C], cmds rueidis.Commands, out []carried[C]) (rueidis.Commands, []carried[C]) {
	for _, b := range behind {
		if more := b.Carry(c); len(more) > 0 {
			cmds = append(cmds, more...)
			out = append(out, carried[C]{b, len(more)})
		}
	}
	return cmds, out
}

type carried[C Conn] struct {
	b Behind[C]
	n int
}

// handOver gives each carried Behind its replies, in order, and reports
// whether one of them now holds c.
func handOver[C Conn](c C, release func(), carried []carried[C], res []rueidis.RedisResult, commit error) (handed bool) {
	for _, k := range carried {
		if k.b.Arrived(c, release, res[:k.n], commit) {
			if handed {
				panic("txn: two riders behind one EXEC hold its connection")
			}
			handed = true
		}
		res = res[k.n:]
	}
	return handed
}

// Held is a connection with a commit's first round trip made on it, behind
// the EXEC of another commit: still watching, with the replies of its
// reads. Replies nil: lost, or not made; there is nothing to hold.
type Held[C Conn] struct {
	Conn    C
	Release func()
	Replies []rueidis.RedisResult
}

// Arrived takes the replies of a first round trip sent on c, which release
// gives back. It reports whether h now holds c: the replies all came back.
func (h *Held[C]) Arrived(c C, release func(), res []rueidis.RedisResult) bool {
	for _, r := range res {
		if r.NonRedisError() != nil {
			return false
		}
	}
	h.Conn, h.Release, h.Replies = c, release, res
	return true
}

// Drop gives back, disarmed, a connection h holds that will not be used.
func (h *Held[C]) Drop() {
	if h != nil && h.Replies != nil {
		Unwatch(h.Conn)
		h.Release()
		h.Replies = nil
	}
}

// Unwatch disarms any WATCH on a connection going back to the pool, where
// a stale WATCH would abort some later, unrelated EXEC. A failure means the
// connection is broken, and the pool drops broken connections.
func Unwatch(c Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Do(ctx, c.B().Unwatch().Build()).Error()
}
