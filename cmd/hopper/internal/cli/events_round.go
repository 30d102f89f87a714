package cli

import (
	"strconv"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// latestRound returns the keys of the build's latest round, whose meta
// says when the build is complete: a CI retry's round runs after the
// build's first round completed (see queue.Build.EnterRound).
func (a *app) latestRound(client rueidis.Client, keys queue.Keys) (queue.Keys, error) {
	v, err := client.Do(a.ctx, client.B().Hget().Key(keys.Meta).Field("round").Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return keys, nil
	}
	if err != nil {
		return keys, err
	}
	if n, err := strconv.Atoi(v); err == nil && n > 1 {
		return keys.OfRound(n), nil
	}
	return keys, nil
}
