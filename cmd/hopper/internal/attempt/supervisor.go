package attempt

import (
	"sync"
	"syscall"
	"time"
)

// Supervisor keeps track of the process groups of the attempts running in
// one hopper process, across its worker slots, so that an interrupt reaches
// them all: the first one (Stop) forwards the signal and gives each its
// grace period, a second one (Kill) ends them at once, and Wait lets the
// process exit only once they are gone. A nil *Supervisor tracks nothing.
// Safe for concurrent use.
type Supervisor struct {
	mu      sync.Mutex
	groups  map[int]struct{}
	stopSig syscall.Signal
	stopped bool
	hurry   chan struct{}
	hurried bool
	idle    *sync.Cond
}

// NewSupervisor returns a Supervisor with nothing running.
func NewSupervisor() *Supervisor {
	s := &Supervisor{groups: map[int]struct{}{}, hurry: make(chan struct{})}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// Stop records that the workers are being stopped by sig: attempts
// cancelled from now on get sig and their grace period instead of being
// killed at once. Call it before cancelling the workers' context.
func (s *Supervisor) Stop(sig syscall.Signal) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped, s.stopSig = true, sig
}

// Kill kills every running group now and cuts every grace period short.
func (s *Supervisor) Kill() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hurried {
		s.hurried = true
		close(s.hurry)
	}
	for pgid := range s.groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// Wait waits until no attempt is running, or d has passed; it reports
// whether none is.
func (s *Supervisor) Wait(d time.Duration) bool {
	if s == nil {
		return true
	}
	timer := time.AfterFunc(d, func() {
		s.mu.Lock()
		s.idle.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.groups) > 0 && time.Now().Before(deadline) {
		s.idle.Wait()
	}
	return len(s.groups) == 0
}

// Running is the number of attempts running.
func (s *Supervisor) Running() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.groups)
}

func (s *Supervisor) add(pgid int) (done func()) {
	if s == nil {
		return func() {}
	}
	s.mu.Lock()
	s.groups[pgid] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.groups, pgid)
		s.idle.Broadcast()
		s.mu.Unlock()
	}
}

// stopping says whether a cancelled attempt is being stopped (rather than
// aborted), with the signal to send and the channel that cuts the grace
// period short.
func (s *Supervisor) stopping() (sig syscall.Signal, hurry <-chan struct{}, ok bool) {
	if s == nil {
		return 0, nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopSig, s.hurry, s.stopped
}
