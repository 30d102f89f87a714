package machinery

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// countedDrop counts how often it was given back.
type countedDrop struct{ n *atomic.Int32 }

func (d countedDrop) Drop() { d.n.Add(1) }

func newCountedDrop() countedDrop { return countedDrop{n: &atomic.Int32{}} }

func TestKeptSlotsTakeGivesWhatWasPutOnce(t *testing.T) {
	var k Slots[countedDrop]
	d := newCountedDrop()
	k.Put("w1", d)
	got, ok := k.Take("w1")
	assert.True(t, ok)
	assert.Same(t, d.n, got.n)
	_, ok = k.Take("w1")
	assert.False(t, ok, "taken already")
	_, ok = k.Take("w2")
	assert.False(t, ok, "nothing kept for w2")
	time.Sleep(KeptMaxAge + 200*time.Millisecond)
	assert.Zero(t, d.n.Load(), "taken: its timer no longer gives it back")
}

func TestKeptSlotsGiveBackWhatIsReplacedOrLeft(t *testing.T) {
	var k Slots[countedDrop]
	first, second := newCountedDrop(), newCountedDrop()
	k.Put("w1", first)
	k.Put("w1", second)
	assert.Eventually(t, func() bool { return first.n.Load() == 1 }, time.Second, 5*time.Millisecond, "replaced: given back")
	assert.Eventually(t, func() bool { return second.n.Load() == 1 }, KeptMaxAge+time.Second, 10*time.Millisecond, "left: given back by its timer")
	_, ok := k.Take("w1")
	assert.False(t, ok, "the timer took it off")
	assert.EqualValues(t, 1, first.n.Load(), "given back once")
}
