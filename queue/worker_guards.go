package queue

import (
	"sync"
	"time"
)

// Every commit pushes its token onto the acting worker's guard, a list (see
// appendTokenRecord). Keeping that list bounded and expiring took two more
// commands in every commit, LTRIM and PEXPIRE, for every worker of a batch:
// at 128 workers about a tenth of the server's time (make bench). Neither
// is needed that often.
// The list only has to keep the tokens a lost commit's resolution may look
// for, and a TTL set a while ago is still running. So a Build remembers,
// per worker guard, when it last gave the guard its TTL and how many tokens
// it pushed since it last trimmed it, and sends each command only when it
// is due:
//
//   - PEXPIRE when the TTL this Build set is older than guardKeep (half the
//     build's TTL), so the guard never has less than half of it left when a
//     commit lands, far more than a resolution takes (ResolveWait);
//   - LTRIM on one push in trimEvery, so the list never holds more than
//     recentTokens+trimEvery of this Build's tokens (and as many more per
//     other process acting under the same worker id, each trimming too).
//
// A guard that vanished under the Build (a Redis restart without the
// guard, a flush, an eviction) is re-created by the commit's LPUSH without
// a TTL. So a commit that does not renew a guard still sends PEXPIRE NX,
// which gives the guard its TTL only when it has none: the guard never
// goes without one, not even for a moment after EXEC, whatever happens to
// the connection there. It costs the server a key lookup and writes
// nothing when the TTL runs. A wrong memory costs a command, and never
// takes a token from a resolution: the list keeps at least the last
// recentTokens.

// trimEvery is how many tokens a Build pushes onto one worker guard per
// LTRIM.
const trimEvery = 16

// maxGuardMemos bounds the worker guards a Build remembers; past it, it
// forgets them all, which costs each one PEXPIRE and LTRIM once more.
const maxGuardMemos = 4096

// workerGuards is a Build's memory of the worker guards it wrote.
type workerGuards struct {
	mu    sync.Mutex
	memos map[string]guardMemo
	keep  time.Duration // how long a TTL this Build set is trusted; 0: never
}

type guardMemo struct {
	renewed time.Time // when a commit that gave the guard its TTL was sent
	pushed  int       // tokens pushed since the last trim known applied
}

// guardRecord is what one commit writes to one worker guard besides its
// token.
type guardRecord struct {
	key         string
	renew, trim bool
}

// guardKeep is how long a worker guard's TTL, set by a commit, is trusted
// to run: half the build's TTL, or nothing when half the TTL would not
// outlast, with room to spare, what may pass between a commit's planning
// and its resolution's last look: the commit's two round trips, each up to
// the client's connection timeouts (rueidis's default write timeout is
// 10 s; roundTripAllowance leaves room for both), then the resolution.
// A guard that expired in that time would hide a token that landed.
func guardKeep(ttl, resolveWait time.Duration) time.Duration {
	if ttl/2 < 2*resolveWait+roundTripAllowance {
		return 0
	}
	return ttl / 2
}

// roundTripAllowance bounds the time a commit's two round trips may take
// on a slow but living server, for guardKeep.
const roundTripAllowance = time.Minute

// plan decides what a commit sent at now writes to the guard key.
func (w *workerGuards) plan(key string, now time.Time) guardRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.memos == nil {
		w.memos = map[string]guardMemo{}
	}
	m, known := w.memos[key]
	if !known && len(w.memos) >= maxGuardMemos {
		clear(w.memos)
	}
	r := guardRecord{
		key:   key,
		renew: !known || w.keep == 0 || m.renewed.IsZero() || now.Sub(m.renewed) >= w.keep,
		trim:  !known || m.pushed+1 >= trimEvery,
	}
	m.pushed++
	w.memos[key] = m
	return r
}

// applied records the commit sent at sent, which wrote records, as applied.
func (w *workerGuards) applied(records []guardRecord, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range records {
		m, known := w.memos[r.key]
		if !known {
			continue // forgotten meanwhile: the next commit renews and trims
		}
		if r.renew {
			m.renewed = sent
		}
		if r.trim {
			m.pushed = 0
		}
		w.memos[r.key] = m
	}
}
