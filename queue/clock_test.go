package queue

import (
	"sync"
	"testing"
	"time"
)

// fakeMono is a monotonic clock the test moves by hand.
type fakeMono struct {
	mu sync.Mutex
	d  time.Duration
}

func (f *fakeMono) now() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.d
}

func (f *fakeMono) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.d += d
}

func TestServerClockTellsAnchorPlusElapsed(t *testing.T) {
	mono := &fakeMono{d: time.Hour}
	c := newServerClock(mono.now)
	if _, ok := c.now(); ok {
		t.Fatal("a clock without an anchor told a time")
	}
	if !c.due() {
		t.Error("a clock without an anchor is not due for a TIME")
	}
	c.anchor(1_000_000, mono.now())
	if ms, ok := c.now(); !ok || ms != 1_000_000 {
		t.Errorf("at the anchor: %d %v, want 1000000 true", ms, ok)
	}
	mono.add(40 * time.Millisecond)
	if ms, ok := c.now(); !ok || ms != 1_000_040 {
		t.Errorf("40 ms after the anchor: %d %v, want 1000040 true", ms, ok)
	}
	if c.due() {
		t.Error("an anchor 40 ms old is due for refresh")
	}
	mono.add(clockRefresh)
	if !c.due() {
		t.Errorf("an anchor %v old is not due for refresh", 40*time.Millisecond+clockRefresh)
	}
	if _, ok := c.now(); !ok {
		t.Error("an anchor under clockMaxAge old was refused")
	}
}

func TestServerClockRefusesAnOldAnchor(t *testing.T) {
	mono := &fakeMono{}
	c := newServerClock(mono.now)
	c.anchor(5_000, mono.now())
	mono.add(clockMaxAge)
	if ms, ok := c.now(); !ok || ms != 5_000+clockMaxAge.Milliseconds() {
		t.Errorf("an anchor exactly clockMaxAge old: %d %v, want %d true", ms, ok, 5_000+clockMaxAge.Milliseconds())
	}
	mono.add(time.Millisecond)
	if ms, ok := c.now(); ok {
		t.Errorf("an anchor %v old told %d: it must be refused", clockMaxAge+time.Millisecond, ms)
	}
	c.anchor(9_000, mono.now()) // a TIME carried on a later round trip
	if ms, ok := c.now(); !ok || ms != 9_000 {
		t.Errorf("re-anchored: %d %v, want 9000 true", ms, ok)
	}
}

func TestServerClockNeverGoesBackwards(t *testing.T) {
	mono := &fakeMono{}
	c := newServerClock(mono.now)
	c.anchor(10_000, mono.now())
	mono.add(300 * time.Millisecond)
	first, _ := c.now() // 10300
	// A reply from a server whose clock is behind (a failover), or one
	// that left the server long before it was read.
	c.anchor(10_100, mono.now())
	got, ok := c.now()
	if !ok || got < first {
		t.Fatalf("after an anchor behind the clock: %d %v, want at least %d", got, ok, first)
	}
	mono.add(100 * time.Millisecond) // anchor + 100 = 10200, still behind 10300
	if got, _ := c.now(); got != first {
		t.Errorf("told %d, want %d held until the anchor catches up", got, first)
	}
	mono.add(150 * time.Millisecond) // 10350
	if got, _ := c.now(); got != 10_350 {
		t.Errorf("told %d, want 10350 once the anchor passes what was told", got)
	}
}

func TestServerClockConcurrentReadsAreOrdered(t *testing.T) {
	mono := &fakeMono{}
	c := newServerClock(mono.now)
	c.anchor(1, mono.now())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for i := range 500 {
				if i%50 == 0 {
					c.anchor(int64(1+g*10), mono.now()) // anchors behind and ahead
				}
				mono.add(time.Microsecond * 300)
				ms, ok := c.now()
				if !ok {
					t.Error("a fresh anchor was refused")
					return
				}
				if ms < last {
					t.Errorf("goroutine %d: told %d after %d", g, ms, last)
					return
				}
				last = ms
			}
		}()
	}
	wg.Wait()
}
