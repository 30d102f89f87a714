package queue

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"
)

// Transient reports whether err is one after which the same call may well
// succeed later without anyone fixing anything: the connection broke, was
// refused or timed out, or the server is loading or failing over
// (CLUSTERDOWN, TRYAGAIN, LOADING). Stale, corrupt, invalid and cancelled
// are never transient. Safe for concurrent use.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrStale) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrInvalidArgument) {
		return false
	}
	var re *rueidis.RedisError
	if errors.As(err, &re) {
		return re.IsClusterDown() || re.IsTryAgain() || re.IsLoading()
	}
	return isConnErr(context.Background(), err)
}

// readTimeout bounds one plain read (meta and the tombstone, progress, a new
// entry): rueidis retries a read-only command after a network error until
// its context ends, so a deadline-free caller would wait for as long as
// Redis stays away instead of learning that it is unreachable.
const readTimeout = 5 * time.Second

func boundedRead(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
