package queue

import (
	"sync"
	"time"
)

// keptSlots holds, per worker, one thing a round trip left for the
// worker's next transition (kept reads, a kept watch) until that
// transition takes it. Each holds a connection that costs the server
// something while it waits, so a timer gives it back with drop after
// keptMaxAge, and putting another gives back the one before.
type keptSlots[V dropper] struct {
	mu       sync.Mutex
	byWorker map[string]*keptSlot[V]
}

// dropper is what a keptSlots holds: drop gives it back, disarmed.
type dropper interface{ drop() }

// keptSlot is one worker's kept value.
type keptSlot[V dropper] struct {
	v     V
	at    time.Time
	timer *time.Timer
}

// put keeps v for worker.
func (k *keptSlots[V]) put(worker string, v V) {
	s := &keptSlot[V]{v: v, at: time.Now()}
	s.timer = time.AfterFunc(keptMaxAge, func() {
		k.mu.Lock()
		mine := k.byWorker[worker] == s
		if mine {
			delete(k.byWorker, worker)
		}
		k.mu.Unlock()
		if mine {
			s.v.drop()
		}
	})
	k.mu.Lock()
	old := k.byWorker[worker]
	if k.byWorker == nil {
		k.byWorker = map[string]*keptSlot[V]{}
	}
	k.byWorker[worker] = s
	k.mu.Unlock()
	if old != nil { // taken off the map here: its timer no longer drops it
		old.timer.Stop()
		go old.v.drop()
	}
}

// take removes and returns what is kept for worker, when it is younger
// than keptMaxAge; an older one is given back. ok false: nothing.
func (k *keptSlots[V]) take(worker string) (v V, ok bool) {
	k.mu.Lock()
	s := k.byWorker[worker]
	delete(k.byWorker, worker)
	k.mu.Unlock()
	if s == nil {
		return v, false
	}
	s.timer.Stop()
	if time.Since(s.at) > keptMaxAge {
		go s.v.drop()
		return v, false
	}
	return s.v, true
}
