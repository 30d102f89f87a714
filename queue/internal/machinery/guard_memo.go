package machinery

import (
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// Every commit adds its token to the acting worker's guard, a sorted set
// of the worker's recent commit tokens scored by the server's time the
// commit read (see appendTokenRecord). A commit whose reply was lost is
// resolved by looking for its token there, so a token must stay as long as
// a resolution may look for it, whoever commits under the same worker id
// meanwhile and however fast: the set is trimmed by age (ZREMRANGEBYSCORE
// of the tokens older than resolutionWindow), never by count, and the
// guard's TTL is never shorter than that window, whatever the build's TTL
// (Transition takes ttl_ms down to 1 ms). A worker's guard so holds its
// commits of the last window, about 80 s by default: at one commit every
// few milliseconds, tens of thousands of 24-byte tokens. Each Build trims
// by its own window, so processes acting under one worker id should share
// their ResolveWait (a worker's is its timeout).
//
// Trimming the set and renewing its TTL in every commit took two more
// commands, for every worker of a batch: at 128 workers about a tenth of
// the server's time (make bench). Neither is needed that often. A TTL set
// a while ago is still running, and tokens a little past the window do no
// harm. So a Build remembers, per worker guard, when it last gave the
// guard its TTL and how many tokens it added since it last trimmed it, and
// sends each command only when it is due:
//
//   - PEXPIRE when the TTL this Build set is older than guardKeep (half the
//     guard's TTL), so the guard never has less than half of it left when
//     a commit lands, which is at least the resolution window;
//   - ZREMRANGEBYSCORE on one token in trimEvery, so the set holds the
//     window's tokens and at most trimEvery more of this Build's (and as
//     many more per other process acting under the same worker id, each
//     trimming too).
//
// A guard that vanished under the Build (a Redis restart without the
// guard, a flush, an eviction) is re-created by the commit's ZADD without
// a TTL. So a commit that does not renew a guard still sends PEXPIRE NX,
// which gives the guard its TTL only when it has none: the guard never
// goes without one, not even for a moment after EXEC, whatever happens to
// the connection there. It costs the server a key lookup and writes
// nothing when the TTL runs. A wrong memory costs a command, and never
// takes a token from a resolution: no trim takes a token of the window.
// A guard lost with its tokens (evicted, flushed) is another matter: a
// lost reply resolved then is taken as not applied, and its unfenced
// effects repeat (see docs/design.md#lost-replies).

// trimEvery is how many tokens a Build adds to one worker guard per trim.
const trimEvery = 16

// maxGuardMemos bounds the worker guards a Build remembers; past it, it
// forgets them all, which costs each one PEXPIRE and a trim once more.
const maxGuardMemos = 4096

// GuardMemo is a Build's memory of the worker guards it wrote.
type GuardMemo struct {
	mu    sync.Mutex
	memos map[string]guardMemo
	keep  time.Duration // how long a TTL this Build set is trusted; 0: never
	// ttlMS is the guards' TTL, windowMS how long their tokens are kept.
	ttlMS, windowMS int64
	Off             bool // the inline engine's: every commit renews and trims
}

// NewGuardMemo returns the memory of a Build whose TTL is ttl: its
// guards live for that TTL, or for the resolution window when that is
// longer.
func NewGuardMemo(ttl, resolveWait time.Duration) *GuardMemo {
	window := ResolutionWindow(resolveWait)
	life := max(ttl, window)
	return &GuardMemo{keep: guardKeep(life, resolveWait), ttlMS: life.Milliseconds(), windowMS: window.Milliseconds()}
}

type guardMemo struct {
	renewed time.Time // when a commit that gave the guard its TTL was sent
	pushed  int       // tokens added since the last trim known applied
}

// GuardRecord is what one commit writes to one worker guard besides its
// token.
type GuardRecord struct {
	Key         string
	Renew, Trim bool
}

// ResolutionWindow is how long a commit's token must stay in its worker's
// guard after the commit read the server's time: what may pass between
// the reads and its resolution's last look. That is the commit's round
// trips, each up to the client's connection timeouts (rueidis's default
// write timeout is 10 s; roundTripAllowance leaves room for them), then
// the resolution, up to ResolveWait, with as much again to spare. A token
// gone by then would hide a commit that landed.
func ResolutionWindow(resolveWait time.Duration) time.Duration {
	return 2*resolveWait + roundTripAllowance
}

// guardKeep is how long a worker guard's TTL, set by a commit, is trusted
// to run: half the guard's TTL, or nothing when half the TTL would not
// outlast the resolution window.
func guardKeep(ttl, resolveWait time.Duration) time.Duration {
	if ttl/2 < ResolutionWindow(resolveWait) {
		return 0
	}
	return ttl / 2
}

// roundTripAllowance bounds the time a commit's round trips may take on a
// slow but living server, for resolutionWindow.
const roundTripAllowance = time.Minute

// Plan decides what a commit sent at now writes to the guard key.
func (w *GuardMemo) Plan(key string, now time.Time) GuardRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.memos == nil {
		w.memos = map[string]guardMemo{}
	}
	m, known := w.memos[key]
	if !known && len(w.memos) >= maxGuardMemos {
		clear(w.memos)
	}
	r := GuardRecord{
		Key:   key,
		Renew: w.Off || !known || w.keep == 0 || m.renewed.IsZero() || now.Sub(m.renewed) >= w.keep,
		Trim:  w.Off || !known || m.pushed+1 >= trimEvery,
	}
	m.pushed++
	w.memos[key] = m
	return r
}

// Applied records the commit sent at sent, which wrote records, as applied.
func (w *GuardMemo) Applied(records []GuardRecord, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range records {
		m, known := w.memos[r.Key]
		if !known {
			continue // forgotten meanwhile: the next commit renews and trims
		}
		if r.Renew {
			m.renewed = sent
		}
		if r.Trim {
			m.pushed = 0
		}
		w.memos[r.Key] = m
	}
}

// AppendWrites appends to cmds the ZADD of token, scored now, to r's
// guard, the trim of the tokens older than the window that r calls for,
// and its PEXPIRE: unconditional when r renews, NX (only a guard without a
// TTL, which the ZADD just created) when not.
func (w *GuardMemo) AppendWrites(cmds rueidis.Commands, b rueidis.Builder, r GuardRecord, token string, now int64) rueidis.Commands {
	cmds = append(cmds, b.Zadd().Key(r.Key).ScoreMember().ScoreMember(float64(now), token).Build())
	if r.Trim {
		cutoff := "(" + strconv.FormatInt(now-w.windowMS, 10)
		cmds = append(cmds, b.Zremrangebyscore().Key(r.Key).Min("-inf").Max(cutoff).Build())
	}
	if r.Renew {
		cmds = append(cmds, b.Pexpire().Key(r.Key).Milliseconds(w.ttlMS).Build())
	} else {
		cmds = append(cmds, b.Pexpire().Key(r.Key).Milliseconds(w.ttlMS).Nx().Build())
	}
	return cmds
}
