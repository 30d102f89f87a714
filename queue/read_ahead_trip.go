package queue

import (
	"time"

	"github.com/redis/rueidis"
)

// aheadTrip is the reads one commit carries behind its EXEC for the
// workers it leaves holding nothing (read_ahead.go). It is sent once, by
// the commit's first attempt that gets as far as its EXEC: an attempt
// after an abort carries none, the entries delivered being stashed already.
type aheadTrip struct {
	k     *readAheads
	b     *Build
	reads []aheadRead
	sent  bool
}

// aheadRead is the reads of one worker: its reclaim's first look (when
// the consumer policy is known: its probe is left to the reclaim), then,
// entries set, XREADGROUP of the priority stream and of the units stream,
// COUNT n, without waiting.
type aheadRead struct {
	worker   string
	n        int
	opts     ReserveOptions
	entries  bool
	look     int // replies of the first look; 0: not sent
	learning []entryAt
}

// appendTo appends the reads to cmds, on c, the first time it is called.
// A nil t appends nothing.
func (t *aheadTrip) appendTo(cmds rueidis.Commands, c rueidis.DedicatedClient) rueidis.Commands {
	if t == nil || t.sent {
		return cmds
	}
	t.sent = true
	b := t.b
	for i := range t.reads {
		rd := &t.reads[i]
		if _, probing := b.consumers.probe(c); !probing {
			look, learning := b.firstLookCmds(c, rd.opts.Timeout.Milliseconds())
			cmds = append(cmds, look...)
			rd.look, rd.learning = len(look), learning
		}
		if rd.entries {
			for _, key := range [2]string{b.keys.Priority, b.keys.Units} {
				cmds = append(cmds, c.B().Xreadgroup().Group(Group, rd.worker).Count(int64(rd.n)).Streams().Key(key).Id(">").Build())
			}
		}
	}
	return cmds
}

// arrived takes the replies of the reads appendTo appended, in order; it
// keeps what they gave for each worker and drops what failed.
func (t *aheadTrip) arrived(res []rueidis.RedisResult) {
	if t == nil || len(res) == 0 {
		return
	}
	at := time.Now()
	for _, rd := range t.reads {
		look := res[:rd.look]
		res = res[rd.look:]
		var f *firstLook
		if rd.look > 0 && noneLost(look) {
			r := &reclaimer{b: t.b, worker: rd.worker, timeoutMS: rd.opts.Timeout.Milliseconds(), fallbackMax: float64(rd.opts.MaxReclaims)}
			if got, err := r.parseFirstLook(look, rd.learning); err == nil {
				f = &got
			}
		}
		var got []stashed
		if rd.entries {
			got = append(delivered(t.b, StreamPriority, res[0]), delivered(t.b, StreamUnits, res[1])...)
			res = res[2:]
		}
		t.k.keep(rd.worker, f, rd.opts, at, got)
	}
}

// noneLost tells whether every reply of res came back.
func noneLost(res []rueidis.RedisResult) bool {
	for _, r := range res {
		if r.NonRedisError() != nil {
			return false
		}
	}
	return true
}

// delivered are the entries of stream s an XREADGROUP reply gave; none
// when it failed (lost with the connection, entries may have been
// delivered all the same: they are reclaimed after the timeout).
func delivered(b *Build, s Stream, r rueidis.RedisResult) []stashed {
	key := b.keys.Units
	if s == StreamPriority {
		key = b.keys.Priority
	}
	streams, err := r.AsXRead()
	if err != nil {
		return nil
	}
	var out []stashed
	for _, x := range streams[key] {
		out = append(out, stashed{s: s, x: x})
	}
	return out
}

// keep records what a read-ahead gave worker: its first look (nil: none)
// made at at on opts, and the entries it delivered, behind any stashed
// before.
func (k *readAheads) keep(worker string, f *firstLook, opts ReserveOptions, at time.Time, got []stashed) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.state(worker)
	if f != nil {
		st.look, st.lookAt, st.lookOn = f, at, opts
	}
	st.stash = append(st.stash, got...)
	k.tidy(worker)
}
