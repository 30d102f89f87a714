package worker

import "time"

// Clock is the time a worker times units and paces its heartbeat by. Tests
// give a fake one so a unit can "run" for minutes in milliseconds. The
// build's own time (event stamps, idle times) always comes from the Redis
// server, never from here.
type Clock interface {
	Now() time.Time
	// After waits for d, like time.After.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
