package live

import (
	"context"
	"fmt"

	"github.com/hopper-queue/hopper/queue"
)

// latestRound returns the round the build's meta names as its latest, with
// that round's meta and workers in place of the build's own: a CI retry's
// round has keys of its own (see docs/design.md#rounds). A build never
// retried costs no further read.
func (t *Tracker) latestRound(ctx context.Context, meta, workers map[string]string) (int, map[string]string, map[string]string, error) {
	n, err := queue.MetaRound(meta)
	if err != nil || n == 1 {
		return 1, meta, workers, err
	}
	keys := t.keys.OfRound(n)
	c := t.client
	res := c.DoMulti(ctx,
		c.B().Hgetall().Key(keys.Meta).Build(),
		c.B().Hgetall().Key(keys.Workers).Build())
	if meta, err = res[0].AsStrMap(); err != nil {
		return n, nil, nil, err
	}
	if workers, err = res[1].AsStrMap(); err != nil {
		return n, nil, nil, err
	}
	if len(meta) == 0 {
		return n, nil, nil, fmt.Errorf("%w: the build's meta names round %d, whose meta %s is missing", queue.ErrCorrupt, n, keys.Meta)
	}
	return n, meta, workers, nil
}
