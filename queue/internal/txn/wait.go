package txn

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"time"
)

// NewToken is a fresh commit token: random, so that no two commits share one.
func NewToken() string {
	var b [12]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Jitter returns a wait in [d/2, d): spread out, so that racing workers do
// not collide again in lockstep.
func Jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// Sleep waits d, or until ctx ends, with its error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// DedicatedContext is ctx when it has a deadline, else ctx without its
// cancellation: rueidis would switch a pooled connection used under a
// deadline-free context to its background pipeline for good, and every
// later return to the pool would cost one more round trip. The caller's
// cancellation is then checked between round trips (see Runner.Commit).
func DedicatedContext(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx // nothing to cancel: nothing to strip, no allocation
	}
	if _, ok := ctx.Deadline(); ok {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
