package lru

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeNow is a clock the test moves by hand.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// opener counts what it opens; each value is a new pointer.
type opener struct {
	mu sync.Mutex
	n  int
}

func (o *opener) open() (*int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	v := o.n
	return &v, nil
}

func mustGet(t *testing.T, c *Cache[string, *int], o *opener, k string) *int {
	t.Helper()
	v, err := c.Get(k, o.open)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestGetSharesByKey(t *testing.T) {
	c, o := New[string, *int](8, time.Minute, time.Now), &opener{}
	a := mustGet(t, c, o, "a")
	if again := mustGet(t, c, o, "a"); again != a {
		t.Fatal("the same key got a second value")
	}
	if b := mustGet(t, c, o, "b"); b == a {
		t.Error("another key shared the value")
	}
	if n := c.Len(); n != 2 {
		t.Errorf("cache holds %d values, want 2", n)
	}
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c, o := New[string, *int](2, time.Hour, time.Now), &opener{}
	v1 := mustGet(t, c, o, "b1")
	v2 := mustGet(t, c, o, "b2")
	mustGet(t, c, o, "b1") // b1 used last: b2 goes next
	mustGet(t, c, o, "b3")
	if n := c.Len(); n != 2 {
		t.Fatalf("cache holds %d values, want its bound 2", n)
	}
	if got := mustGet(t, c, o, "b1"); got != v1 {
		t.Error("the recently used b1 was evicted")
	}
	if got := mustGet(t, c, o, "b2"); got == v2 {
		t.Error("the least recently used b2 was kept past the bound")
	}
}

func TestDropsIdleValues(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1000, 0)}
	c, o := New[string, *int](8, 10*time.Minute, clock.now), &opener{}
	old := mustGet(t, c, o, "old")
	clock.add(6 * time.Minute)
	kept := mustGet(t, c, o, "kept")
	clock.add(5 * time.Minute) // old idle 11 min, kept 5
	mustGet(t, c, o, "other")
	if n := c.Len(); n != 2 {
		t.Errorf("cache holds %d values after old went idle, want 2", n)
	}
	if got := mustGet(t, c, o, "kept"); got != kept {
		t.Error("a value idle for 5 minutes was dropped")
	}
	if got := mustGet(t, c, o, "old"); got == old {
		t.Error("a value idle for 11 minutes was kept")
	}
}

func TestForgetAndFailedOpens(t *testing.T) {
	c, o := New[string, *int](8, time.Hour, time.Now), &opener{}
	v := mustGet(t, c, o, "a")
	c.Forget("a", new(int)) // not the value kept: left alone
	if got := mustGet(t, c, o, "a"); got != v {
		t.Fatal("Forget of another value dropped the one kept")
	}
	c.Forget("a", v)
	if got := mustGet(t, c, o, "a"); got == v {
		t.Error("a forgotten value was handed out again")
	}
	bad := errors.New("bad")
	if _, err := c.Get("b", func() (*int, error) { return nil, bad }); !errors.Is(err, bad) {
		t.Errorf("open's error %v, want %v", err, bad)
	}
	if n := c.Len(); n != 1 {
		t.Errorf("cache holds %d values, want 1: failed opens keep nothing", n)
	}
}

func TestConcurrentCallsShareOneValue(t *testing.T) {
	c, o := New[string, *int](4, time.Hour, time.Now), &opener{}
	var wg sync.WaitGroup
	shared := make([]*int, 16)
	for g := range shared {
		wg.Go(func() {
			v, err := c.Get("one", o.open)
			if err != nil {
				t.Error(err)
				return
			}
			shared[g] = v
		})
	}
	wg.Wait()
	for g, v := range shared {
		if v != shared[0] {
			t.Fatalf("goroutine %d got its own value of one key", g)
		}
	}
	for range 16 { // then churn: six keys through a cache of four
		wg.Go(func() {
			for i := range 200 {
				if _, err := c.Get(fmt.Sprint("b", i%6), o.open); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := c.Len(); n > 4 {
		t.Errorf("cache holds %d values, over its bound 4", n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byKey) != c.order.Len() {
		t.Errorf("map holds %d keys, list %d values", len(c.byKey), c.order.Len())
	}
}
