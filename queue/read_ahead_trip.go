package queue

import (
	"time"

	"github.com/redis/rueidis"
)

// aheadTrip is the reads one commit carries behind its EXEC for the
// workers it leaves holding nothing (read_ahead.go), a txn.Behind. It is
// sent once, by the commit's first attempt that gets as far as its EXEC:
// an attempt after an abort carries none, the entries delivered being
// stashed already.
type aheadTrip struct {
	k     *readAheads
	e     *engine
	reads []aheadRead
	sent  bool
	at    time.Time // when Carry gave the reads
}

// aheadRead is the reads of one worker: its reclaim's first look (when
// due, see machinery.ReclaimPace, and the consumer policy is known: its probe
// is left to the reclaim), else the priority stream's info alone, for its
// last-generated-id (aheadPrio); then, entries set, XREADGROUP of stream,
// COUNT n, without waiting.
type aheadRead struct {
	worker   string
	n        int
	opts     ReserveOptions
	entries  bool
	stream   Stream
	look     int  // replies of the first look; 0: not sent
	info     bool // the priority stream's info sent in its place
	learning []entryAt
}

// Carry returns the reads, on c, the first time it is asked.
func (t *aheadTrip) Carry(c rueidis.DedicatedClient) rueidis.Commands {
	if t.sent {
		return nil
	}
	t.sent, t.at = true, time.Now()
	e := t.e
	var cmds rueidis.Commands
	for i := range t.reads {
		rd := &t.reads[i]
		timeoutMS := rd.opts.Timeout.Milliseconds()
		if _, probing := e.consumers.Probe(c); !probing && e.reclaims.Due(timeoutMS, t.at) {
			look, learning := e.firstLookCmds(c, timeoutMS)
			cmds = append(cmds, look...)
			rd.look, rd.learning = len(look), learning
		} else {
			cmds = append(cmds, c.B().XinfoStream().Key(e.schema.keys.Priority).Build())
			rd.info = true
		}
		if rd.entries {
			cmds = append(cmds, c.B().Xreadgroup().Group(Group, rd.worker).Count(int64(rd.n)).Streams().Key(e.schema.keys.stream(rd.stream)).Id(">").Build())
		}
	}
	return cmds
}

// Arrived takes the replies of the reads Carry gave, in order, whatever
// the commit's outcome: it keeps what they gave for each worker and drops
// what failed. It never holds c: it leaves no WATCH armed.
func (t *aheadTrip) Arrived(_ rueidis.DedicatedClient, _ func(), res []rueidis.RedisResult, _ error) bool {
	t.arrived(res)
	return false
}

func (t *aheadTrip) arrived(res []rueidis.RedisResult) {
	at := time.Now()
	for _, rd := range t.reads {
		look := res[:rd.look]
		res = res[rd.look:]
		var f *firstLook
		var prio aheadPrio
		if rd.look > 0 && noneLost(look) {
			r := &reclaimer{e: t.e, worker: rd.worker, timeoutMS: rd.opts.Timeout.Milliseconds(), fallbackMax: float64(rd.opts.MaxReclaims)}
			if got, err := r.parseFirstLook(look, rd.learning, t.at); err == nil {
				f = &got
				prio.gen = lastGenerated(look[2+2])
			}
		}
		if rd.info {
			prio.gen = lastGenerated(res[0])
			res = res[1:]
		}
		var got []stashed
		if rd.entries {
			var ok bool
			got, ok = delivered(t.e, rd.stream, res[0])
			prio.read, prio.empty = rd.stream == StreamPriority, ok && len(got) == 0
			res = res[1:]
		}
		t.k.keep(rd.worker, f, rd.opts, at, got, prio)
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

// delivered are the entries of stream s an XREADGROUP reply gave, and
// whether it answered; none when it failed (lost with the connection,
// entries may have been delivered all the same: they are reclaimed after
// the timeout).
func delivered(e *engine, s Stream, r rueidis.RedisResult) ([]stashed, bool) {
	streams, err := r.AsXRead()
	if rueidis.IsRedisNil(err) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	var out []stashed
	for _, x := range streams[e.schema.keys.stream(s)] {
		out = append(out, stashed{s: s, x: x})
	}
	return out, true
}

// aheadPrio is what a read-ahead saw of the priority stream: its
// last-generated-id in the look ("": not known), and whether it was read
// and found empty.
type aheadPrio struct {
	gen         string
	read, empty bool
}

// emptyAt is the priority stream's last-generated-id while it is known
// empty after p, when it was known empty at was before ("": it may hold
// entries). Entries are only ever added with a new id, so a stream found
// empty stays so while its last-generated-id stays.
func (p aheadPrio) emptyAt(was string) string {
	switch {
	case p.gen == "":
		return ""
	case p.read && p.empty:
		return p.gen
	case !p.read && p.gen == was:
		return was
	}
	return ""
}

// lastGenerated reads last-generated-id from an XINFO STREAM reply; "":
// none.
func lastGenerated(r rueidis.RedisResult) string {
	info, err := r.AsMap()
	if err != nil {
		return ""
	}
	m, ok := info["last-generated-id"]
	if !ok {
		return ""
	}
	id, _ := m.ToString()
	return id
}

// keep records what a read-ahead gave worker: its first look (nil: none)
// made at at on opts, the entries it delivered, behind any stashed
// before, and what it saw of the priority stream.
func (k *readAheads) keep(worker string, f *firstLook, opts ReserveOptions, at time.Time, got []stashed, prio aheadPrio) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.state(worker)
	st.prioEmptyAt = prio.emptyAt(st.prioEmptyAt)
	if f != nil {
		st.look, st.lookAt, st.lookOn = f, at, opts
	}
	st.stash = append(st.stash, got...)
	k.tidy(worker)
}
