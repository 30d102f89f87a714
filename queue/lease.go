package queue

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// DefaultLeaseTTL is how long a publisher's lease lives. It is never renewed:
// a publisher that dies after taking it blocks the build only this long.
const DefaultLeaseTTL = 60 * time.Second

// Lease is the right to publish a build, held by one worker until it
// expires. Its token is "<worker_id>:<16 lowercase hex>", stored as the
// build's leader key.
type Lease struct {
	Token string
}

// WorkerID returns the id of the worker that took the lease.
func (l Lease) WorkerID() string {
	i := strings.LastIndexByte(l.Token, ':')
	if i < 0 {
		return ""
	}
	return l.Token[:i]
}

func (l Lease) check() error {
	i := strings.LastIndexByte(l.Token, ':')
	if i <= 0 || len(l.Token)-i-1 != 16 {
		return errInvalid("lease token %q is not <worker_id>:<16 hex digits>", l.Token)
	}
	for _, r := range l.Token[i+1:] {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return errInvalid("lease token %q is not <worker_id>:<16 lowercase hex digits>", l.Token)
		}
	}
	return checkID("lease token", l.Token)
}

func newLease(worker string) Lease {
	var b [8]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails
	return Lease{Token: worker + ":" + hex.EncodeToString(b[:])}
}

// TryLease tries to become the build's publisher: SET leader <token> NX with
// an expiry of ttl (zero: DefaultLeaseTTL; EX when ttl is whole seconds, PX
// otherwise). won is false when another worker holds the lease; nothing is
// written then. The lease is never renewed and never released: it expires.
func (b *Build) TryLease(ctx context.Context, worker string, ttl time.Duration) (l Lease, won bool, err error) {
	if err := checkID("worker id", worker); err != nil {
		return Lease{}, false, err
	}
	if err := b.schema.checkLifecycleKeys(); err != nil {
		return Lease{}, false, err
	}
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if ttl < time.Millisecond {
		return Lease{}, false, errInvalid("lease TTL %v is below one millisecond", ttl)
	}
	l = newLease(worker)
	set := b.client.B().Set().Key(b.schema.keys.Leader).Value(l.Token).Nx()
	var cmd rueidis.Completed
	if ttl%time.Second == 0 {
		cmd = set.ExSeconds(int64(ttl / time.Second)).Build()
	} else {
		cmd = set.PxMilliseconds(ttl.Milliseconds()).Build()
	}
	err = b.client.Do(ctx, cmd).Error()
	if rueidis.IsRedisNil(err) {
		return Lease{}, false, nil
	}
	if err != nil {
		return Lease{}, false, err
	}
	return l, true, nil
}
