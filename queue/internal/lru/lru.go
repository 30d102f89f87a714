// Package lru holds a bounded cache of values opened on demand: least
// recently used out past its bound, and out after a while unused. Package
// queue keeps in one the Builds that Transition shares among its calls
// (see queue/transition.go); nothing in it knows what a Build is.
package lru

import (
	"container/list"
	"sync"
	"time"
)

// Cache maps keys to values opened on first use. It holds at most max
// values, least recently used first out, and drops a value not used for
// idle when it is next called. It is safe for concurrent use.
type Cache[K comparable, V comparable] struct {
	mu    sync.Mutex
	max   int
	idle  time.Duration
	now   func() time.Time
	order *list.List // of *entry[K, V], most recently used at the front
	byKey map[K]*list.Element
}

type entry[K comparable, V comparable] struct {
	key  K
	v    V
	used time.Time
}

// New returns an empty Cache of at most max values, each dropped once
// unused for idle, by the clock now.
func New[K comparable, V comparable](max int, idle time.Duration, now func() time.Time) *Cache[K, V] {
	return &Cache[K, V]{max: max, idle: idle, now: now, order: list.New(), byKey: map[K]*list.Element{}}
}

// Get returns the value of k, calling open for it the first time (and
// again once it was dropped). open runs under the cache's lock, so that
// calls that arrive at once for one key share one value: it must be quick
// and must not call the cache. A value open fails to give is not kept.
func (c *Cache[K, V]) Get(k K, open func() (V, error)) (V, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropIdle(now)
	if e, ok := c.byKey[k]; ok {
		en := e.Value.(*entry[K, V])
		en.used = now
		c.order.MoveToFront(e)
		return en.v, nil
	}
	v, err := open()
	if err != nil {
		return v, err
	}
	c.byKey[k] = c.order.PushFront(&entry[K, V]{key: k, v: v, used: now})
	for c.order.Len() > c.max {
		c.remove(c.order.Back())
	}
	return v, nil
}

// Forget drops the value of k if it is still v: the next Get opens a new
// one. A value dropped and replaced since is left alone.
func (c *Cache[K, V]) Forget(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok && e.Value.(*entry[K, V]).v == v {
		c.remove(e)
	}
}

// Len is how many values the cache holds.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// dropIdle removes the values last used before now minus idle, oldest
// first: they are at the back. c.mu is held.
func (c *Cache[K, V]) dropIdle(now time.Time) {
	for e := c.order.Back(); e != nil; e = c.order.Back() {
		if now.Sub(e.Value.(*entry[K, V]).used) < c.idle {
			return
		}
		c.remove(e)
	}
}

// remove drops e. c.mu is held.
func (c *Cache[K, V]) remove(e *list.Element) {
	delete(c.byKey, e.Value.(*entry[K, V]).key)
	c.order.Remove(e)
}
