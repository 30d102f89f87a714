package machinery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWorkerGuardsPlan(t *testing.T) {
	w := &GuardMemo{keep: time.Minute}
	t0 := time.Unix(1000, 0)

	first := w.Plan("g", t0)
	assert.Equal(t, GuardRecord{Key: "g", Renew: true, Trim: true}, first, "a guard new to the Build is renewed and trimmed")
	again := w.Plan("g", t0)
	assert.True(t, again.Renew, "nothing is trusted before a commit is known applied")

	w.Applied([]GuardRecord{first}, t0)
	var trims []int
	for i := 1; i <= 40; i++ {
		r := w.Plan("g", t0.Add(time.Second))
		assert.False(t, r.Renew, "push %d: the TTL set at t0 still runs", i)
		if r.Trim {
			trims = append(trims, i)
			w.Applied([]GuardRecord{r}, t0.Add(time.Second))
		}
	}
	assert.Equal(t, []int{trimEvery, 2 * trimEvery}, trims, "one trim per trimEvery pushes since the last trim applied")

	assert.True(t, w.Plan("g", t0.Add(time.Minute)).Renew, "a TTL older than keep is renewed")

	never := &GuardMemo{}
	r := never.Plan("g", t0)
	never.Applied([]GuardRecord{r}, t0)
	assert.True(t, never.Plan("g", t0).Renew, "keep 0: every commit renews")
}

func TestWorkerGuardsBound(t *testing.T) {
	w := &GuardMemo{keep: time.Minute}
	t0 := time.Unix(1000, 0)
	for i := range maxGuardMemos {
		key := string(rune('a'+i%26)) + time.Duration(i).String()
		w.Applied([]GuardRecord{w.Plan(key, t0)}, t0)
	}
	assert.False(t, w.Plan("a0s", t0).Renew)
	assert.True(t, w.Plan("one too many", t0).Renew)
	assert.Len(t, w.memos, 1, "past the bound, the memory starts over")
	assert.True(t, w.Plan("a0s", t0).Renew, "a forgotten guard is renewed")
}

func TestGuardKeep(t *testing.T) {
	assert.Equal(t, 12*time.Hour, guardKeep(24*time.Hour, 10*time.Second))
	assert.Equal(t, 5*time.Minute, guardKeep(10*time.Minute, 10*time.Second))
	assert.Zero(t, guardKeep(40*time.Second, 10*time.Second), "half the TTL must outlast a resolution")
	assert.Zero(t, guardKeep(100*time.Second, 10*time.Second), "and the commit's round trips before it, up to the connection timeouts")
	assert.Equal(t, 80*time.Second, guardKeep(160*time.Second, 10*time.Second))
	assert.Zero(t, guardKeep(time.Second, 0))
}

// A worker guard outlives the resolution window whatever the build's TTL,
// and keeps its tokens for that window.
func TestWorkerGuardsLifetime(t *testing.T) {
	const resolveWait, ttl = 10 * time.Second, 4 * time.Hour // queue's defaults
	window := ResolutionWindow(resolveWait)
	assert.Equal(t, 80*time.Second, window)
	short := NewGuardMemo(time.Millisecond, resolveWait)
	assert.Equal(t, window.Milliseconds(), short.ttlMS, "a 1 ms TTL does not shorten the guard")
	assert.Equal(t, window.Milliseconds(), short.windowMS)
	assert.Zero(t, short.keep, "such a guard is renewed by every commit")
	long := NewGuardMemo(ttl, resolveWait)
	assert.Equal(t, ttl.Milliseconds(), long.ttlMS)
	assert.Equal(t, ttl/2, long.keep)
	assert.Equal(t, window.Milliseconds(), long.windowMS, "tokens are kept for the window, not the TTL")
}
