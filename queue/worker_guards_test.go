package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWorkerGuardsPlan(t *testing.T) {
	w := &workerGuards{keep: time.Minute}
	t0 := time.Unix(1000, 0)

	first := w.plan("g", t0)
	assert.Equal(t, guardRecord{key: "g", renew: true, trim: true}, first, "a guard new to the Build is renewed and trimmed")
	again := w.plan("g", t0)
	assert.True(t, again.renew, "nothing is trusted before a commit is known applied")

	w.applied([]guardRecord{first}, t0)
	var trims []int
	for i := 1; i <= 40; i++ {
		r := w.plan("g", t0.Add(time.Second))
		assert.False(t, r.renew, "push %d: the TTL set at t0 still runs", i)
		if r.trim {
			trims = append(trims, i)
			w.applied([]guardRecord{r}, t0.Add(time.Second))
		}
	}
	assert.Equal(t, []int{trimEvery, 2 * trimEvery}, trims, "one trim per trimEvery pushes since the last trim applied")

	assert.True(t, w.plan("g", t0.Add(time.Minute)).renew, "a TTL older than keep is renewed")

	never := &workerGuards{}
	r := never.plan("g", t0)
	never.applied([]guardRecord{r}, t0)
	assert.True(t, never.plan("g", t0).renew, "keep 0: every commit renews")
}

func TestWorkerGuardsBound(t *testing.T) {
	w := &workerGuards{keep: time.Minute}
	t0 := time.Unix(1000, 0)
	for i := range maxGuardMemos {
		key := string(rune('a'+i%26)) + time.Duration(i).String()
		w.applied([]guardRecord{w.plan(key, t0)}, t0)
	}
	assert.False(t, w.plan("a0s", t0).renew)
	assert.True(t, w.plan("one too many", t0).renew)
	assert.Len(t, w.memos, 1, "past the bound, the memory starts over")
	assert.True(t, w.plan("a0s", t0).renew, "a forgotten guard is renewed")
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
	window := resolutionWindow(DefaultResolveWait)
	assert.Equal(t, 80*time.Second, window)
	short := newWorkerGuards(time.Millisecond, DefaultResolveWait)
	assert.Equal(t, window.Milliseconds(), short.ttlMS, "a 1 ms TTL does not shorten the guard")
	assert.Equal(t, window.Milliseconds(), short.windowMS)
	assert.Zero(t, short.keep, "such a guard is renewed by every commit")
	long := newWorkerGuards(DefaultTTL, DefaultResolveWait)
	assert.Equal(t, DefaultTTL.Milliseconds(), long.ttlMS)
	assert.Equal(t, DefaultTTL/2, long.keep)
	assert.Equal(t, window.Milliseconds(), long.windowMS, "tokens are kept for the window, not the TTL")
}
