package machinery

import (
	"sync"
	"time"
)

// KeptMaxAge is the oldest kept reads, kept watch or read-ahead look a
// transition stands on: as old as the clock's anchor may be.
const KeptMaxAge = ClockMaxAge

// Slots holds, per worker, one thing a round trip left for the
// worker's next transition (kept reads, a kept watch) until that
// transition takes it. Each holds a connection that costs the server
// something while it waits, so a timer gives it back with drop after
// KeptMaxAge, and putting another gives back the one before.
type Slots[V Dropper] struct {
	mu       sync.Mutex
	byWorker map[string]*slot[V]
}

// Dropper is what Slots hold: Drop gives it back, disarmed.
type Dropper interface{ Drop() }

// slot is one worker's kept value.
type slot[V Dropper] struct {
	v     V
	at    time.Time
	timer *time.Timer
}

// Put keeps v for worker.
func (k *Slots[V]) Put(worker string, v V) {
	s := &slot[V]{v: v, at: time.Now()}
	s.timer = time.AfterFunc(KeptMaxAge, func() {
		k.mu.Lock()
		mine := k.byWorker[worker] == s
		if mine {
			delete(k.byWorker, worker)
		}
		k.mu.Unlock()
		if mine {
			s.v.Drop()
		}
	})
	k.mu.Lock()
	old := k.byWorker[worker]
	if k.byWorker == nil {
		k.byWorker = map[string]*slot[V]{}
	}
	k.byWorker[worker] = s
	k.mu.Unlock()
	if old != nil { // taken off the map here: its timer no longer drops it
		old.timer.Stop()
		go old.v.Drop()
	}
}

// Take removes and returns what is kept for worker, when it is younger
// than KeptMaxAge; an older one is given back. ok false: nothing.
func (k *Slots[V]) Take(worker string) (v V, ok bool) {
	k.mu.Lock()
	s := k.byWorker[worker]
	delete(k.byWorker, worker)
	k.mu.Unlock()
	if s == nil {
		return v, false
	}
	s.timer.Stop()
	if time.Since(s.at) > KeptMaxAge {
		go s.v.Drop()
		return v, false
	}
	return s.v, true
}
