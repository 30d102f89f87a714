package queue

import (
	"context"
	"encoding/json"

	"github.com/redis/rueidis"
)

// MaxTestResultsBytes bounds one attempt's per-test results (see
// Result.TestResults): the hash that keeps them beside the attempt log
// must stay small enough to read whole.
const MaxTestResultsBytes = 256 << 10

// AttemptRef names one settled attempt the way its event in the attempt
// log does (finalized or requeued: unit_id, stream, entry_id, worker_id):
// no two settlements of one round share all four, since an entry is
// settled once and a reclaim changes its worker.
type AttemptRef struct {
	UnitID   string `json:"unit_id"`
	Stream   string `json:"stream"`
	EntryID  string `json:"entry_id"`
	WorkerID string `json:"worker_id"`
}

func attemptRef(r Reservation) AttemptRef {
	return AttemptRef{UnitID: r.UnitID, Stream: string(r.Stream), EntryID: r.EntryID, WorkerID: r.WorkerID}
}

// field is the ref as the hash field: a JSON array, which no id can make
// ambiguous.
func (a AttemptRef) field() string {
	b, _ := json.Marshal([]string{a.UnitID, a.Stream, a.EntryID, a.WorkerID})
	return string(b)
}

func parseAttemptRef(field string) (AttemptRef, bool) {
	var parts []string
	if json.Unmarshal([]byte(field), &parts) != nil || len(parts) != 4 {
		return AttemptRef{}, false
	}
	return AttemptRef{UnitID: parts[0], Stream: parts[1], EntryID: parts[2], WorkerID: parts[3]}, true
}

// testResultsKey is the hash of the per-test results of the build's (or
// the round's) settled attempts, in its slot. See
// docs/design.md#test-results.
func (k Keys) testResultsKey() string { return k.prefix + "tests" }

// checkTestResults refuses a payload that is not JSON or too big: it would
// make the report's read fail, or the hash grow without bound.
func checkTestResults(raw json.RawMessage) error {
	switch {
	case len(raw) == 0:
		return nil
	case len(raw) > MaxTestResultsBytes:
		return errInvalid("test results are %d bytes, over %d", len(raw), MaxTestResultsBytes)
	case !json.Valid(raw):
		return errInvalid("test results are not valid JSON: %.80q", raw)
	}
	return nil
}

// writeTestResults appends to cmds the commands that keep an attempt's
// results, in the same MULTI as its settlement: they are kept exactly when
// the settlement commits (never for a stale attempt), and the hash gets the
// build's TTL with each write.
func (sc *schema) writeTestResults(c rueidis.DedicatedClient, r Reservation, raw json.RawMessage, cmds rueidis.Commands) rueidis.Commands {
	if len(raw) == 0 {
		return cmds
	}
	key := sc.keys.testResultsKey()
	return append(cmds,
		c.B().Hset().Key(key).FieldValue().FieldValue(attemptRef(r).field(), string(raw)).Build(),
		c.B().Arbitrary("PEXPIRE").Keys(key).Args(sc.ttlText).Build(),
	)
}

// TestResults reads the per-test results of every settled attempt that
// had some, by attempt. It writes nothing. A field that is not an
// AttemptRef is skipped: nothing of hopper's writes one.
func (b *Build) TestResults(ctx context.Context) (map[AttemptRef]json.RawMessage, error) {
	ctx, cancel := boundedRead(ctx, readTimeout)
	defer cancel()
	key := b.schema.keys.testResultsKey()
	all, err := b.client.Do(ctx, b.client.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return nil, &ReadError{Read: "HGETALL " + key, Err: err}
	}
	out := make(map[AttemptRef]json.RawMessage, len(all))
	for f, v := range all {
		if ref, ok := parseAttemptRef(f); ok {
			out[ref] = json.RawMessage(v)
		}
	}
	return out, nil
}
