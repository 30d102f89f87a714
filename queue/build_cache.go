package queue

import (
	"container/list"
	"reflect"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// Transition takes the script's KEYS and ARGV on every call, as its callers
// called the script, and keeps nothing between calls of its own. A Build
// opened afresh for each call would get none of what a Build shares among
// its callers: the batches and chains of the transitions that arrive at
// once, and what it learnt (the worker guards it gave a TTL, the units of
// the entries it saw, the server's kind of consumer creation). So the calls
// on one client, keys and TTL share one Build, kept in transitionBuilds.
//
// What a Build learns only chooses what to send; every decision stands on
// what its own transaction reads and watches. A Build kept across calls is
// therefore as correct as a fresh one, only cheaper.
//
// The cache holds at most maxCachedBuilds Builds and forgets one idle for
// cachedBuildIdle, so that a process driving many builds in turn holds
// only the recent ones; the clients of the Builds it holds stay reachable
// until then. A Build forgotten while a call still uses it stays whole for
// that call: only the next call opens a new one.

// maxCachedBuilds bounds the Builds Transition keeps.
const maxCachedBuilds = 256

// cachedBuildIdle is how long Transition keeps a Build no call used.
const cachedBuildIdle = 10 * time.Minute

// transitionBuilds is the Builds Transition shares among its calls.
var transitionBuilds = newBuildCache(maxCachedBuilds, cachedBuildIdle, time.Now)

// buildKey is what makes two Transition calls the same Build: everything a
// Build is opened with. Transition passes no option but the TTL.
type buildKey struct {
	client rueidis.Client
	keys   Keys
	ttl    time.Duration
}

// buildCache is a bounded map of Builds, least recently used first out, and
// idle ones out after a while. It is safe for concurrent use.
type buildCache struct {
	mu    sync.Mutex
	max   int
	idle  time.Duration
	now   func() time.Time
	order *list.List // of *cachedBuild, most recently used at the front
	byKey map[buildKey]*list.Element
}

type cachedBuild struct {
	key  buildKey
	b    *Build
	used time.Time
}

func newBuildCache(max int, idle time.Duration, now func() time.Time) *buildCache {
	return &buildCache{max: max, idle: idle, now: now, order: list.New(), byKey: map[buildKey]*list.Element{}}
}

// open returns the Build of (client, keys, ttl), opening it with OpenKeys
// the first time. A client whose type cannot be a map key (no rueidis
// client is such) gets a fresh Build on every call.
func (c *buildCache) open(client rueidis.Client, keys Keys, ttl time.Duration) (*Build, error) {
	if client == nil || !reflect.TypeOf(client).Comparable() {
		return openTransitionBuild(client, keys, ttl)
	}
	k := buildKey{client: client, keys: keys, ttl: ttl}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropIdle(now)
	if e, ok := c.byKey[k]; ok {
		cb := e.Value.(*cachedBuild)
		cb.used = now
		c.order.MoveToFront(e)
		return cb.b, nil
	}
	b, err := openTransitionBuild(client, keys, ttl)
	if err != nil {
		return nil, err // bad arguments are never kept
	}
	c.byKey[k] = c.order.PushFront(&cachedBuild{key: k, b: b, used: now})
	for c.order.Len() > c.max {
		c.remove(c.order.Back())
	}
	return b, nil
}

// forget drops b, if it is still the Build kept for its key: the next call
// opens a new one. Transition forgets a Build whose client is closed.
func (c *buildCache) forget(b *Build) {
	if !reflect.TypeOf(b.client).Comparable() {
		return
	}
	k := buildKey{client: b.client, keys: b.schema.keys, ttl: b.opts.TTL}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok && e.Value.(*cachedBuild).b == b {
		c.remove(e)
	}
}

// dropIdle removes the Builds last used before now minus idle, oldest
// first: they are at the back.
func (c *buildCache) dropIdle(now time.Time) {
	for e := c.order.Back(); e != nil; e = c.order.Back() {
		if now.Sub(e.Value.(*cachedBuild).used) < c.idle {
			return
		}
		c.remove(e)
	}
}

func (c *buildCache) remove(e *list.Element) {
	delete(c.byKey, e.Value.(*cachedBuild).key)
	c.order.Remove(e)
}

// len is how many Builds the cache holds.
func (c *buildCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// openTransitionBuild opens a Build as Transition runs it: guarded builds
// only (see meta.go), set once, before any call shares it.
func openTransitionBuild(client rueidis.Client, keys Keys, ttl time.Duration) (*Build, error) {
	return openScript(client, keys, Options{TTL: ttl})
}
