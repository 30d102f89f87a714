package integration

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// An attempt's test results are kept in the build's slot, with its TTL,
// in the settlement's own transaction, under the attempt its event names;
// results that are not JSON or too big are refused before anything is
// written.
func TestTestResultsKeptWithTheSettlement(t *testing.T) {
	l := newLifecycle(t)
	_, err := l.build.Join(l.ctx, "w0", manifestOf("u1"), queue.JoinOptions{})
	require.NoError(t, err)
	r, ok, err := l.build.Reserve(l.ctx, "w0", queue.ReserveOptions{Block: 10 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)

	for _, bad := range []json.RawMessage{json.RawMessage(`{"cases":`), json.RawMessage(`"` + strings.Repeat("x", queue.MaxTestResultsBytes) + `"`)} {
		l.requireUnchanged(func() {
			err := l.build.Finalize(l.ctx, r, queue.Result{Outcome: events.OutcomePassed, DurationMS: 1, TestResults: bad})
			assert.True(t, errors.Is(err, queue.ErrInvalidArgument), "got %v", err)
		})
	}
	results := json.RawMessage(`{"cases":[{"unit":"u1","name":"TestA","status":"passed"}]}`)
	require.NoError(t, l.build.Finalize(l.ctx, r, queue.Result{Outcome: events.OutcomePassed, DurationMS: 1, TestResults: results}))
	got, err := l.build.TestResults(l.ctx)
	require.NoError(t, err)
	ref := queue.AttemptRef{UnitID: "u1", Stream: string(r.Stream), EntryID: r.EntryID, WorkerID: "w0"}
	assert.Equal(t, map[queue.AttemptRef]json.RawMessage{ref: results}, got)
	ttl := l.pttl("hopper:{" + l.id + "}:tests")
	assert.Positive(t, ttl, "the results have the build's TTL")
	assert.LessOrEqual(t, ttl, int64(ttlMS))
}
