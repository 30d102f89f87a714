package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/timings"
	"github.com/redis/rueidis"
)

// DefaultTimingsTTL is how long a suite's timings live after the last build
// that recorded any: a suite not built for that long starts afresh.
const DefaultTimingsTTL = 30 * 24 * time.Hour

// timingsAttempts bounds RecordTimings' optimistic retries: builds of one
// suite finishing at the same moment are few.
const timingsAttempts = 5

// TimingsKey is the key of suite's timings: hopper:timings:{<suite>}. It
// belongs to no build (builds come and go; the suite's history stays), and
// its hash tag, the suite id, gives it a cluster slot of its own.
func TimingsKey(suite string) string { return "hopper:timings:{" + suite + "}" }

func checkSuiteID(suite string) error {
	if err := checkID("suite id", suite); err != nil {
		return err
	}
	if strings.ContainsAny(suite, "{}") {
		return errInvalid("suite id %q holds a brace, which would move its key to another cluster slot", suite)
	}
	return nil
}

// LoadTimings reads what earlier builds of suite (see
// fingerprint.SuiteID) recorded. A suite with no timings gives an empty
// table. ErrCorrupt: the key holds something that is not a timings table
// (the caller goes on without it; the next RecordTimings replaces it).
func LoadTimings(ctx context.Context, client rueidis.Client, suite string) (timings.Table, error) {
	if err := checkSuiteID(suite); err != nil {
		return nil, err
	}
	ctx, cancel := boundedRead(ctx, readTimeout)
	defer cancel()
	key := TimingsKey(suite)
	raw, err := client.Do(ctx, client.B().Get().Key(key).Build()).AsBytes()
	switch {
	case rueidis.IsRedisNil(err):
		return timings.Table{}, nil
	case isWrongType(err):
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	case err != nil:
		return nil, fmt.Errorf("queue: reading %s: %w", key, err)
	}
	t, err := timings.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	}
	return t, nil
}

// RecordTimings writes recent over suite's timings and gives the key ttl
// (zero: DefaultTimingsTTL), in one WATCH/MULTI/EXEC: builds of one suite
// that finish together each keep what the other wrote for units it did not
// run. Timings that do not decode are replaced by recent alone, and
// replaced is true. ErrContention after a few lost races; nothing is
// written on any error.
func RecordTimings(ctx context.Context, client rueidis.Client, suite string, recent timings.Table, ttl time.Duration) (replaced bool, err error) {
	if err := checkSuiteID(suite); err != nil {
		return false, err
	}
	if ttl == 0 {
		ttl = DefaultTimingsTTL
	}
	if ttl < time.Millisecond {
		return false, errInvalid("timings TTL %v is below one millisecond", ttl)
	}
	key := TimingsKey(suite)
	for n := 1; n <= timingsAttempts; n++ {
		err = client.Dedicated(func(c rueidis.DedicatedClient) error {
			replaced, err = recordTimingsOnce(ctx, c, key, recent, ttl)
			return err
		})
		if !errors.Is(err, errAborted) {
			return replaced, err
		}
		if err := sleep(ctx, jitter(10*time.Millisecond<<n)); err != nil {
			return false, err
		}
	}
	return false, fmt.Errorf("%w after %d attempts to record %s", ErrContention, timingsAttempts, key)
}

func recordTimingsOnce(ctx context.Context, c rueidis.DedicatedClient, key string, recent timings.Table, ttl time.Duration) (replaced bool, err error) {
	res := c.DoMulti(ctx, c.B().Watch().Key(key).Build(), c.B().Get().Key(key).Build())
	if err := res[0].Error(); err != nil {
		return false, err
	}
	old := timings.Table{}
	raw, err := res[1].AsBytes()
	switch {
	case rueidis.IsRedisNil(err):
	case isWrongType(err):
		replaced = true
	case err != nil:
		unwatch(c)
		return false, err
	default:
		if old, err = timings.Decode(raw); err != nil {
			old, replaced = timings.Table{}, true
		}
	}
	// SET replaces a key of any type: a corrupt store heals here.
	res = c.DoMulti(ctx,
		c.B().Multi().Build(),
		c.B().Set().Key(key).Value(string(timings.Merge(old, recent).Encode())).PxMilliseconds(ttl.Milliseconds()).Build(),
		c.B().Exec().Build())
	_, err = execOutcome(res, "timings record")
	return replaced, err
}

// isWrongType tells a reply refused because the key holds another type.
func isWrongType(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(re.Error(), "WRONGTYPE")
}
