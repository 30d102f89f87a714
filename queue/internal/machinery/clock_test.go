package machinery

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
	c := NewClock(mono.now)
	if _, ok := c.Now(); ok {
		t.Fatal("a clock without an anchor told a time")
	}
	if !c.Due() {
		t.Error("a clock without an anchor is not due for a TIME")
	}
	c.Anchor(1_000_000, mono.now())
	if ms, ok := c.Now(); !ok || ms != 1_000_000 {
		t.Errorf("at the anchor: %d %v, want 1000000 true", ms, ok)
	}
	mono.add(40 * time.Millisecond)
	if ms, ok := c.Now(); !ok || ms != 1_000_040 {
		t.Errorf("40 ms after the anchor: %d %v, want 1000040 true", ms, ok)
	}
	if c.Due() {
		t.Error("an anchor 40 ms old is due for refresh")
	}
	mono.add(ClockRefresh)
	if !c.Due() {
		t.Errorf("an anchor %v old is not due for refresh", 40*time.Millisecond+ClockRefresh)
	}
	if _, ok := c.Now(); !ok {
		t.Error("an anchor under ClockMaxAge old was refused")
	}
}

func TestServerClockRefusesAnOldAnchor(t *testing.T) {
	mono := &fakeMono{}
	c := NewClock(mono.now)
	c.Anchor(5_000, mono.now())
	mono.add(ClockMaxAge)
	if ms, ok := c.Now(); !ok || ms != 5_000+ClockMaxAge.Milliseconds() {
		t.Errorf("an anchor exactly ClockMaxAge old: %d %v, want %d true", ms, ok, 5_000+ClockMaxAge.Milliseconds())
	}
	mono.add(time.Millisecond)
	if ms, ok := c.Now(); ok {
		t.Errorf("an anchor %v old told %d: it must be refused", ClockMaxAge+time.Millisecond, ms)
	}
	c.Anchor(9_000, mono.now()) // a TIME carried on a later round trip
	if ms, ok := c.Now(); !ok || ms != 9_000 {
		t.Errorf("re-anchored: %d %v, want 9000 true", ms, ok)
	}
}

func TestServerClockNeverGoesBackwards(t *testing.T) {
	mono := &fakeMono{}
	c := NewClock(mono.now)
	c.Anchor(10_000, mono.now())
	mono.add(300 * time.Millisecond)
	first, _ := c.Now() // 10300
	// A reply from a server whose clock is behind (a failover), or one
	// that left the server long before it was read.
	c.Anchor(10_100, mono.now())
	got, ok := c.Now()
	if !ok || got < first {
		t.Fatalf("after an anchor behind the clock: %d %v, want at least %d", got, ok, first)
	}
	mono.add(100 * time.Millisecond) // anchor + 100 = 10200, still behind 10300
	if got, _ := c.Now(); got != first {
		t.Errorf("told %d, want %d held until the anchor catches up", got, first)
	}
	mono.add(150 * time.Millisecond) // 10350
	if got, _ := c.Now(); got != 10_350 {
		t.Errorf("told %d, want 10350 once the anchor passes what was told", got)
	}
}

func TestServerClockConcurrentReadsAreOrdered(t *testing.T) {
	mono := &fakeMono{}
	c := NewClock(mono.now)
	c.Anchor(1, mono.now())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for i := range 500 {
				if i%50 == 0 {
					c.Anchor(int64(1+g*10), mono.now()) // anchors behind and ahead
				}
				mono.add(time.Microsecond * 300)
				ms, ok := c.Now()
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

// An anchor read before the one the clock holds never replaces it: an old
// reply is never taken for a fresh one.
func TestOlderReplyNeverReplacesAnchor(t *testing.T) {
	mono := &fakeMono{d: time.Hour}
	c := NewClock(mono.now)
	early := mono.now()
	mono.add(500 * time.Millisecond)
	c.Anchor(20_000, mono.now())
	c.Anchor(19_600, early) // arrived before the anchor, used after it
	if ms, _ := c.Now(); ms != 20_000 {
		t.Errorf("told %d, want 20000 from the newer anchor", ms)
	}
	mono.add(700 * time.Millisecond) // 1.2 s after the old reply arrived
	if ms, ok := c.Now(); !ok || ms != 20_700 {
		t.Errorf("told %d %v, want 20700", ms, ok)
	}
}
