package queue

import (
	"context"
	"fmt"
)

// WorkerCount is how many workers have a record in the build: every worker
// that took part, those gone included. It sizes batches (see
// docs/design.md#batches). It writes nothing.
func (b *Build) WorkerCount(ctx context.Context) (int64, error) {
	ctx, cancel := boundedRead(ctx, readTimeout)
	defer cancel()
	n, err := b.client.Do(ctx, b.client.B().Hlen().Key(b.keys.Workers).Build()).AsInt64()
	if err != nil {
		return 0, fmt.Errorf("queue: counting the workers of %s: %w", b.keys.Workers, err)
	}
	return n, nil
}
