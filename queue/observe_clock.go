package queue

import (
	"github.com/hopper-queue/hopper/queue/internal/engine"
	"github.com/redis/rueidis"
)

// observedNow reads an observer's TIME reply as epoch milliseconds, through
// engine.ParseTime as the transitions read theirs: the workers' stamps an observer
// compares with are the server's time, never a client's. A reply that is
// not two numbers is corrupt (no Redis sends it); a failed one is not.
func observedNow(r rueidis.RedisResult) (int64, error) {
	if err := r.Error(); err != nil {
		return 0, &ReadError{Read: "TIME", Err: err}
	}
	ms, err := engine.ParseTime(r)
	if err != nil {
		return 0, &ReadError{Read: "TIME", Err: err, corrupt: true}
	}
	return ms, nil
}
