package machinery

import (
	"slices"
	"time"
)

// Kept reads (queue/internal/engine/kept_reads.go) pay only when the worker's predicted next
// transition comes within the keep window. A worker running units back to
// back calls its heartbeat and its finalize within milliseconds; a worker
// in a real suite heartbeats every third of its timeout, tens of seconds
// apart, and runs units for seconds, so reads kept for it would cost the
// server their WATCH and reads, then an UNWATCH, and hold a connection for
// a second, nearly every time, for nothing.
//
// So a Build keeps reads for a worker only while they would have been
// used: KeptPace remembers each worker's last transition and, for each
// transition that predicts another, whether the worker's next call after
// it was that transition and came within the window. A requeue or an
// abandon in place of a predicted finalize counts as it: which settlement
// a unit gets says nothing of how soon the next unit's comes. Every pair
// is judged, whether reads were kept for it or not, so a worker that
// stopped getting kept reads gets them again as soon as one such pair
// comes quickly, and loses them at its first pair that does not. A worker
// it knows nothing of is presumed quick: learning that it is not costs one
// unused read per kind of pair.

// MaxPacedWorkers bounds the workers a Build's KeptPace remembers; past it
// the one idle longest is forgotten, and is presumed quick again.
const MaxPacedWorkers = 4096

// KeptPace decides, per worker, whether to keep reads after a commit. It
// is not safe for concurrent use: its owner guards it.
type KeptPace struct {
	Window time.Duration // how long kept reads are usable
	Limit  int           // workers remembered at most
	// Next is the transition a worker likely calls after mode on the same
	// reservation, "" when none is worth reading for; Settles tells the
	// transitions that end a reservation.
	Next    func(mode string) string
	Settles func(mode string) bool
	workers map[string]*workerPace
}

// workerPace is what KeptPace remembers of one worker.
type workerPace struct {
	mode string    // its last transition called
	at   time.Time // when it was called
	// slow holds the transitions whose predicted next transition did not
	// come within the window the last time the worker called them.
	slow []string
}

// Called records that worker calls a mode transition at now, judging the
// pair it closes: the worker's previous transition and this one.
func (p *KeptPace) Called(worker, mode string, now time.Time) {
	w := p.workers[worker]
	if w == nil {
		w = p.remember(worker)
	} else if want := p.Next(w.mode); want != "" {
		prev := w.mode
		w.slow = slices.DeleteFunc(w.slow, func(m string) bool { return m == prev })
		if !p.stands(want, mode) || now.Sub(w.at) > p.Window {
			w.slow = append(w.slow, prev)
		}
	}
	w.mode, w.at = mode, now
}

// Keeps tells whether the commit of worker's mode transition should keep
// the reads of the transition predicted after it.
func (p *KeptPace) Keeps(worker, mode string) bool {
	if p.Next(mode) == "" {
		return false
	}
	w := p.workers[worker]
	return w == nil || !slices.Contains(w.slow, mode)
}

// remember adds worker, forgetting the worker idle longest when full.
func (p *KeptPace) remember(worker string) *workerPace {
	if p.workers == nil {
		p.workers = map[string]*workerPace{}
	}
	if len(p.workers) >= p.Limit {
		var oldest string
		var at time.Time
		found := false
		for id, w := range p.workers {
			if !found || w.at.Before(at) {
				oldest, at, found = id, w.at, true
			}
		}
		delete(p.workers, oldest)
	}
	w := &workerPace{}
	p.workers[worker] = w
	return w
}

// stands tells whether a mode transition called where want was predicted
// keeps the worker's pace: want itself, or another settlement for a
// settlement.
func (p *KeptPace) stands(want, mode string) bool {
	return mode == want || p.Settles(want) && p.Settles(mode)
}
