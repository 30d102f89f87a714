package queue

// The Builds Transition shares (see transitionBuilds); the cache itself is
// package lru's, tested there.

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// cacheClient stands for a client in the cache's keys; nothing is sent.
type cacheClient struct {
	rueidis.Client
	name string
}

func mustOpen(t *testing.T, c buildCache, client rueidis.Client, keys Keys, ttl time.Duration) *Build {
	t.Helper()
	b, err := c.open(client, keys, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuildCacheSharesByClientKeysAndTTL(t *testing.T) {
	c := newBuildCache(8, time.Minute, time.Now)
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
	if n := c.builds.Len(); n != 4 {
		t.Errorf("cache holds %d Builds, want 4", n)
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
	if n := c.builds.Len(); n != 1 {
		t.Errorf("cache holds %d Builds, want 1: refused calls keep nothing", n)
	}
}
