package integration

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/queue"
)

// ReadLook shows a follower the build as it now runs: round 1's meta,
// workers and tombstone and the server's clock, then, once a retry round
// opens, that round's meta and workers. A meta round that is not a round
// number, or names a round whose meta is missing, is corrupt.
func TestReadLookShowsTheLatestRound(t *testing.T) {
	l := newLifecycle(t)
	look, err := l.build.ReadLook(l.ctx)
	require.NoError(t, err)
	assert.Empty(t, look.Meta, "not published yet")
	assert.False(t, look.Tombstone)

	_, err = l.build.Join(l.ctx, "w1", manifestOf("a"), queue.JoinOptions{})
	require.NoError(t, err)
	settleAll(t, l, l.build, "w1", map[string]bool{"a": true})
	look, err = l.build.ReadLook(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, look.Round)
	assert.Equal(t, "1", look.Meta["finalized_count"])
	assert.Contains(t, look.Workers, "w1")
	assert.True(t, look.Tombstone)
	server, err := l.admin.Do(l.ctx, l.admin.B().Time().Build()).AsStrSlice()
	require.NoError(t, err)
	var sec int64
	_, err = fmt.Sscan(server[0], &sec)
	require.NoError(t, err)
	assert.InDelta(t, sec*1000, look.NowMS, 2000, "the server's clock, in milliseconds")

	_, err = l.build.EnterRound(l.ctx, "w2", queue.RetrySignal{Force: true})
	require.NoError(t, err)
	rb, err := l.build.Round(2)
	require.NoError(t, err)
	r, ok, err := rb.Reserve(l.ctx, "w2", queue.ReserveOptions{Block: 10 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "a", r.UnitID)
	look, err = l.build.ReadLook(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, look.Round)
	assert.Equal(t, "0", look.Meta["finalized_count"], "round 2's meta")
	assert.Equal(t, "2", look.Meta["round"])
	assert.Contains(t, look.Workers, "w2")
	assert.NotContains(t, look.Workers, "w1", "round 2's workers")

	for _, round := range []string{"x", "0", "5"} {
		require.NoError(t, l.admin.Do(l.ctx, l.admin.B().Hset().Key(l.keys.Meta).FieldValue().FieldValue("round", round).Build()).Error())
		_, err = l.build.ReadLook(l.ctx)
		assert.Truef(t, errors.Is(err, queue.ErrCorrupt), "round %q: got %v, want ErrCorrupt", round, err)
		assert.ErrorContainsf(t, err, round, "round %q: the error names it", round)
	}
}

// ReadAttemptsAfter reads the log from just after the id given, across
// pages: a follower sees each entry once, in order.
func TestReadAttemptsAfterReadsOnlyWhatFollows(t *testing.T) {
	l := newLifecycle(t)
	const n = 2500 // three pages
	var logged []string
	for i := range n {
		id, err := l.admin.Do(l.ctx, l.admin.B().Xadd().Key(l.keys.Attempts).Id("*").FieldValue().FieldValue("json", fmt.Sprintf(`{"n":%d}`, i)).Build()).ToString()
		require.NoError(t, err)
		logged = append(logged, id)
	}
	read := func(after string) (ids, evs []string) {
		err := l.build.ReadAttemptsAfter(l.ctx, after, func(id, ev string, ok bool) error {
			require.True(t, ok)
			ids, evs = append(ids, id), append(evs, ev)
			return nil
		})
		require.NoError(t, err)
		return ids, evs
	}
	ids, evs := read("")
	assert.Equal(t, logged, ids, "from the first")
	assert.Equal(t, `{"n":0}`, evs[0])
	for _, from := range []int{0, 999, 1000, 1998, n - 2} {
		ids, evs = read(logged[from])
		assert.Equalf(t, logged[from+1:], ids, "after entry %d", from)
		assert.Equalf(t, fmt.Sprintf(`{"n":%d}`, from+1), evs[0], "after entry %d", from)
	}
	ids, _ = read(logged[n-1])
	assert.Empty(t, ids, "after the last: nothing")

	stop := errors.New("stop")
	seen := 0
	err := l.build.ReadAttemptsAfter(l.ctx, "", func(string, string, bool) error { seen++; return stop })
	assert.ErrorIs(t, err, stop, "each's error ends the read")
	assert.Equal(t, 1, seen)
}

// ReadCompletion tells a follower of the log whether the latest round is
// complete: not published, running, then its counts; a retry round's own;
// a gone build by its tombstone. A ready round's count that is not a count,
// and a meta round that is not a round number, are corrupt.
func TestReadCompletionJudgesTheLatestRound(t *testing.T) {
	l := newLifecycle(t)
	c, err := l.build.ReadCompletion(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Completion{Round: 1}, c, "not published yet")

	_, err = l.build.Join(l.ctx, "w1", manifestOf("a", "b"), queue.JoinOptions{})
	require.NoError(t, err)
	c, err = l.build.ReadCompletion(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Completion{Round: 1, Published: true, State: "ready", Total: 2, Tombstone: true}, c)

	settleAll(t, l, l.build, "w1", map[string]bool{"b": true})
	_, err = l.build.EnterRound(l.ctx, "w2", queue.RetrySignal{Force: true})
	require.NoError(t, err)
	c, err = l.build.ReadCompletion(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Completion{Round: 2, Published: true, State: "ready", Total: 1, Tombstone: true}, c, "round 2's counts")
	rb, err := l.build.Round(2)
	require.NoError(t, err)
	settleAll(t, l, rb, "w2", nil)
	c, err = l.build.ReadCompletion(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, [2]int64{1, 1}, [2]int64{c.Finalized, c.Total})

	rk := l.keys.OfRound(2)
	for _, field := range []string{"total_units", "finalized_count"} {
		require.NoError(t, l.admin.Do(l.ctx, l.admin.B().Hset().Key(rk.Meta).FieldValue().FieldValue(field, "lots").Build()).Error())
		_, err = l.build.ReadCompletion(l.ctx)
		var me *queue.MetaError
		assert.Truef(t, errors.As(err, &me) && errors.Is(err, queue.ErrCorrupt), "%s: got %v, want a *MetaError", field, err)
		assert.ErrorContains(t, err, field+` "lots" is not a count`)
		require.NoError(t, l.admin.Do(l.ctx, l.admin.B().Hset().Key(rk.Meta).FieldValue().FieldValue(field, "1").Build()).Error())
	}

	for _, round := range []string{"x", "", "-1"} {
		require.NoError(t, l.admin.Do(l.ctx, l.admin.B().Hset().Key(l.keys.Meta).FieldValue().FieldValue("round", round).Build()).Error())
		_, err = l.build.ReadCompletion(l.ctx)
		assert.Truef(t, errors.Is(err, queue.ErrCorrupt), "round %q: got %v, want ErrCorrupt", round, err)
		assert.ErrorContainsf(t, err, fmt.Sprintf("%q", round), "round %q: the error names it", round)
	}

	require.NoError(t, l.admin.Do(l.ctx, l.admin.B().Del().Key(l.keys.Meta).Build()).Error())
	c, err = l.build.ReadCompletion(l.ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Completion{Round: 1, Tombstone: true}, c, "gone: no meta, the tombstone left")
}
