package machinery

import (
	"sync"
	"time"
)

// A reservation reclaims first, and its first look (two XPENDINGs and an
// XINFO STREAM per stream, one XPENDING of a window of entries) is most
// of what a reservation costs the server while nothing is idle, which is
// nearly always. An entry becomes idle only after the reclaim timeout, so
// a look that found nothing idle stays good, for a small part of that
// timeout, for every worker of the Build reserving on the same timeout.
// ReserveBatch therefore looks at most once per LookEvery(timeout) while
// the looks find nothing: a unit whose owner went silent is reclaimed that
// much later at most (a second, or an eighth of a shorter timeout). A look
// that finds something idle, or entries whose fate it must read, makes
// the next one due at once. Reclaim and Transition always look. See
// docs/design.md#reclaim.

// ReclaimPace is a Build's memory of its latest quiet looks, by timeout.
type ReclaimPace struct {
	mu      sync.Mutex
	quietAt map[int64]time.Time // timeout in ms: when a look last found nothing
	Off     bool                // the inline engine's: every reservation looks
}

// maxPacedTimeouts bounds the timeouts remembered; past it, all are
// forgotten, which costs each one look.
const maxPacedTimeouts = 64

// LookEvery is how long a quiet look on timeout stays good.
func LookEvery(timeoutMS int64) time.Duration {
	return min(time.Duration(timeoutMS)*time.Millisecond/8, time.Second)
}

// Due tells whether a reservation on timeoutMS must look for idle entries.
func (p *ReclaimPace) Due(timeoutMS int64, now time.Time) bool {
	if p.Off {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.quietAt[timeoutMS]
	return !ok || now.Sub(at) >= LookEvery(timeoutMS)
}

// Looked records a first look on timeoutMS, begun at at, and whether it
// was quiet: nothing idle, nothing to read further.
func (p *ReclaimPace) Looked(timeoutMS int64, at time.Time, quiet bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !quiet {
		delete(p.quietAt, timeoutMS)
		return
	}
	if p.quietAt == nil || len(p.quietAt) >= maxPacedTimeouts {
		p.quietAt = map[int64]time.Time{}
	}
	if prev, ok := p.quietAt[timeoutMS]; !ok || at.After(prev) {
		p.quietAt[timeoutMS] = at
	}
}
