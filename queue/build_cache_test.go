package queue

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// cacheClient stands for a client in the cache's keys; nothing is sent.
type cacheClient struct {
	rueidis.Client
	name string
}

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

func mustOpen(t *testing.T, c *buildCache, client rueidis.Client, keys Keys, ttl time.Duration) *Build {
	t.Helper()
	b, err := c.open(client, keys, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuildCacheSharesByClientKeysAndTTL(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1000, 0)}
	c := newBuildCache(8, time.Minute, clock.now)
	c1, c2 := &cacheClient{name: "a"}, &cacheClient{name: "b"}
	k1, k2 := BuildKeys("b1"), BuildKeys("b2")
	b := mustOpen(t, c, c1, k1, time.Second)
	if again := mustOpen(t, c, c1, k1, time.Second); again != b {
		t.Fatal("the same client, keys and TTL got a second Build")
	}
	for name, other := range map[string]*Build{
		"another client": mustOpen(t, c, c2, k1, time.Second),
		"other keys":     mustOpen(t, c, c1, k2, time.Second),
		"another TTL":    mustOpen(t, c, c1, k1, 2*time.Second),
	} {
		if other == b {
			t.Errorf("%s shared the Build", name)
		}
	}
	if got := b.opts.TTL; got != time.Second {
		t.Errorf("cached Build's TTL %v, want 1s", got)
	}
	if n := c.len(); n != 4 {
		t.Errorf("cache holds %d Builds, want 4", n)
	}
}

func TestBuildCacheEvictsLeastRecentlyUsed(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1000, 0)}
	c := newBuildCache(2, time.Hour, clock.now)
	cl := &cacheClient{name: "a"}
	b1 := mustOpen(t, c, cl, BuildKeys("b1"), time.Second)
	b2 := mustOpen(t, c, cl, BuildKeys("b2"), time.Second)
	mustOpen(t, c, cl, BuildKeys("b1"), time.Second) // b1 used last: b2 goes next
	mustOpen(t, c, cl, BuildKeys("b3"), time.Second)
	if n := c.len(); n != 2 {
		t.Fatalf("cache holds %d Builds, want its bound 2", n)
	}
	if got := mustOpen(t, c, cl, BuildKeys("b1"), time.Second); got != b1 {
		t.Error("the recently used b1 was evicted")
	}
	if got := mustOpen(t, c, cl, BuildKeys("b2"), time.Second); got == b2 {
		t.Error("the least recently used b2 was kept past the bound")
	}
}

func TestBuildCacheDropsIdleBuilds(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1000, 0)}
	c := newBuildCache(8, 10*time.Minute, clock.now)
	cl := &cacheClient{name: "a"}
	old := mustOpen(t, c, cl, BuildKeys("old"), time.Second)
	clock.add(6 * time.Minute)
	kept := mustOpen(t, c, cl, BuildKeys("kept"), time.Second)
	clock.add(5 * time.Minute) // old idle 11 min, kept 5
	mustOpen(t, c, cl, BuildKeys("other"), time.Second)
	if n := c.len(); n != 2 {
		t.Errorf("cache holds %d Builds after old went idle, want 2", n)
	}
	if got := mustOpen(t, c, cl, BuildKeys("kept"), time.Second); got != kept {
		t.Error("a Build idle for 5 minutes was dropped")
	}
	if got := mustOpen(t, c, cl, BuildKeys("old"), time.Second); got == old {
		t.Error("a Build idle for 11 minutes was kept")
	}
}

func TestBuildCacheForgetAndBadArguments(t *testing.T) {
	c := newBuildCache(8, time.Hour, time.Now)
	cl := &cacheClient{name: "a"}
	b := mustOpen(t, c, cl, BuildKeys("b1"), time.Second)
	c.forget(b)
	if got := mustOpen(t, c, cl, BuildKeys("b1"), time.Second); got == b {
		t.Error("a forgotten Build was handed out again")
	}
	if _, err := c.open(cl, Keys{}, time.Second); err == nil {
		t.Error("keys not made by BuildKeys were accepted")
	}
	if _, err := c.open(nil, BuildKeys("b1"), time.Second); err == nil {
		t.Error("a nil client was accepted")
	}
	if n := c.len(); n != 1 {
		t.Errorf("cache holds %d Builds, want 1: refused calls keep nothing", n)
	}
}

func TestBuildCacheConcurrentCallsShareOneBuild(t *testing.T) {
	c := newBuildCache(4, time.Hour, time.Now)
	cl := &cacheClient{name: "a"}
	var wg sync.WaitGroup
	shared := make([]*Build, 16)
	for g := range shared {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := c.open(cl, BuildKeys("one"), time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			shared[g] = b
		}()
	}
	wg.Wait()
	for g, b := range shared {
		if b != shared[0] {
			t.Fatalf("goroutine %d got its own Build of one key", g)
		}
	}
	for range 16 { // then churn: six keys through a cache of four
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if _, err := c.open(cl, BuildKeys(fmt.Sprint("b", i%6)), time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := c.len(); n > 4 {
		t.Errorf("cache holds %d Builds, over its bound 4", n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byKey) != c.order.Len() {
		t.Errorf("map holds %d keys, list %d Builds", len(c.byKey), c.order.Len())
	}
}
