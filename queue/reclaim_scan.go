package queue

import (
	"fmt"

	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// streamScan is one unit stream's pending list as a reclaim sees it.
type streamScan struct {
	stream Stream
	cand   fence.Row // first entry idle for the timeout, anywhere in the list
	hasCnd bool
	window []fence.Row // the first fence.ScanWindow pending entries

	// The stream's max-deleted-entry-id, when the server reports one: no
	// pending entry above it can have been deleted.
	maxDeletedMS, maxDeletedSeq uint64
	knowsDeleted                bool
}

// mayBeDeleted reports whether row's stream entry might be gone.
func (s streamScan) mayBeDeleted(row fence.Row) bool {
	if !s.knowsDeleted {
		return true
	}
	ms, seq, ok := parseEntryID(row.EntryID)
	if !ok {
		return true
	}
	return ms < s.maxDeletedMS || (ms == s.maxDeletedMS && seq <= s.maxDeletedSeq)
}

// pending is the window as the walk sees it: which entries might be
// deleted, which were read for the walk, and what fields says of them.
func (s streamScan) pending(read map[entryAt]bool, fields map[entryAt]entryFields) []fence.Pending {
	out := make([]fence.Pending, len(s.window))
	for i, row := range s.window {
		at := entryAt{s.stream, row.EntryID}
		out[i] = fence.Pending{Row: row, MayBeDeleted: s.mayBeDeleted(row), Read: read[at], Present: fields[at].exists}
	}
	return out
}

// undecided returns the window's entries whose fate the walk cannot know
// without reading the stream (see fence.ToRead).
func (s streamScan) undecided(timeoutMS int64) []fence.Row {
	var out []fence.Row
	for _, i := range fence.ToRead(s.pending(nil, nil), timeoutMS) {
		out = append(out, s.window[i])
	}
	return out
}

// entryAt names one entry of one unit stream.
type entryAt struct {
	stream Stream
	id     string
}

// scanReplies is how many replies scanCmds' commands give.
const scanReplies = 6

// scanCmds reads what a reclaim decides on, per unit stream (priority
// first): the first entry idle for the timeout anywhere in the pending list
// (its unit's state is checked before anything moves), the first
// fence.ScanWindow pending entries (XAUTOCLAIM's reach), and the stream's
// info, whose max-deleted-entry-id tells which pending entries might have
// been deleted from the stream.
func (sc *schema) scanCmds(c rueidis.DedicatedClient, timeoutMS int64) rueidis.Commands {
	k := sc.keys
	cmds := make(rueidis.Commands, 0, scanReplies)
	for _, s := range []Stream{StreamPriority, StreamUnits} {
		cmds = append(cmds,
			c.B().Xpending().Key(k.stream(s)).Group(Group).Idle(timeoutMS).Start("-").End("+").Count(1).Build(),
			c.B().Xpending().Key(k.stream(s)).Group(Group).Start("-").End("+").Count(fence.ScanWindow).Build(),
			c.B().XinfoStream().Key(k.stream(s)).Build())
	}
	return cmds
}

// mayClaim reports whether a reclaim's walk may stand on the unit state of
// the entry at, as the first look saw the pending lists: it is a stream's
// idle candidate, or idle in its window.
func mayClaim(scans []streamScan, at entryAt, timeoutMS int64) bool {
	for _, sc := range scans {
		if sc.stream != at.stream {
			continue
		}
		if sc.hasCnd && sc.cand.EntryID == at.id {
			return true
		}
		for _, row := range sc.window {
			if row.EntryID == at.id {
				return fence.Idle(row, timeoutMS)
			}
		}
	}
	return false
}

func parseScans(res []rueidis.RedisResult) ([]streamScan, error) {
	scans := make([]streamScan, 0, 2)
	for i, s := range []Stream{StreamPriority, StreamUnits} {
		cand, has, err := pendingRow(res[3*i])
		if err != nil {
			return nil, fmt.Errorf("queue: XPENDING %s: %w", s, err)
		}
		window, err := pendingRows(res[3*i+1])
		if err != nil {
			return nil, fmt.Errorf("queue: XPENDING %s: %w", s, err)
		}
		sc := streamScan{stream: s, cand: cand, hasCnd: has, window: window}
		if info, err := res[3*i+2].AsMap(); err == nil {
			if m, ok := info["max-deleted-entry-id"]; ok {
				if id, err := m.ToString(); err == nil {
					sc.maxDeletedMS, sc.maxDeletedSeq, sc.knowsDeleted = parseEntryID(id)
				}
			}
		}
		scans = append(scans, sc)
	}
	return scans, nil
}

// xrangeEntry reads the entry at.
func (sc *schema) xrangeEntry(c rueidis.DedicatedClient, at entryAt) rueidis.Completed {
	return c.B().Xrange().Key(sc.keys.stream(at.stream)).Start(at.id).End(at.id).Build()
}
