package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// observed records a running build as its observers read it: published
// and ready, 1 of 2 units finalized, w1 at work, no tombstone.
func observed(t *testing.T) (*replay, *Build) {
	r := newReplay(t)
	meta := map[string]string{metaState: stateReady, metaTotalUnits: "2", metaFinalized: "1"}
	r.on("HGETALL "+replayKeys.Meta, hashReply(meta))
	r.on("HGETALL "+replayKeys.Workers, hashReply(map[string]string{"w1": heldRecord}))
	r.onFunc("HMGET "+replayKeys.Meta, fieldsOf(meta))
	r.on("HLEN "+replayKeys.Workers, mock.RedisInt64(1))
	b, err := Open(r, buildID, Options{})
	require.NoError(t, err)
	return r, b
}

// fieldsOf answers an HMGET of hash h, field by field.
func fieldsOf(h map[string]string) func([]string) rueidis.RedisResult {
	return func(words []string) rueidis.RedisResult {
		vals := make([]string, 0, len(words)-2)
		for _, f := range words[2:] {
			vals = append(vals, h[f])
		}
		return mock.Result(hmgetReply(vals...))
	}
}

// assertOnlyReads checks that an observer wrote nothing: watching a build
// must never keep a dead one alive.
func assertOnlyReads(t *testing.T, r *replay) {
	t.Helper()
	reads := map[string]bool{"HGETALL": true, "HGET": true, "HMGET": true, "HLEN": true, "EXISTS": true, "TIME": true, "XRANGE": true}
	for _, line := range r.sentLines() {
		assert.True(t, reads[strings.Fields(line)[0]], "an observer sent %q", line)
	}
}

func TestObserversRead(t *testing.T) {
	r, b := observed(t)
	ctx := context.Background()

	pr, err := b.ReadPresence(ctx)
	require.NoError(t, err)
	assert.Equal(t, stateReady, pr.Meta[metaState])
	assert.False(t, pr.Tombstone)

	poll, err := b.ReadPoll(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"w1": heldRecord}, poll.Workers)
	assert.Equal(t, int64(serverTimeMS), poll.NowMS)

	look, err := b.ReadLook(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, look.Round)
	assert.Equal(t, int64(serverTimeMS), look.NowMS)

	p, err := b.Progress(ctx)
	require.NoError(t, err)
	assert.Equal(t, Progress{Finalized: 1, Total: 2}, p)
	assert.False(t, p.Complete())

	cp, err := b.ReadCompletion(ctx)
	require.NoError(t, err)
	assert.Equal(t, Completion{Round: 1, Published: true, State: stateReady, Finalized: 1, Total: 2}, cp)

	n, err := b.WorkerCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)

	results, err := b.TestResults(ctx)
	require.NoError(t, err)
	assert.Empty(t, results)

	assertOnlyReads(t, r)
}

// The log is read a page of scanPage entries at a time, each page after
// the last id of the one before.
func TestReadAttemptsPages(t *testing.T) {
	r, b := observed(t)
	r.onFunc("XRANGE "+replayKeys.Attempts, func(words []string) rueidis.RedisResult {
		first := 1
		if words[2] != "-" {
			first = scanPage + 1
		}
		n := scanPage
		if first > 1 {
			n = 2
		}
		entries := make([]rueidis.RedisMessage, n)
		for i := range entries {
			entries[i] = mock.RedisArray(mock.RedisString(fmt.Sprintf("%d-0", first+i)), bulks("json", "{}"))
		}
		return mock.Result(mock.RedisArray(entries...))
	})
	var ids []string
	require.NoError(t, b.ReadAttempts(context.Background(), func(id, event string, ok bool) error {
		assert.True(t, ok)
		assert.Equal(t, "{}", event)
		ids = append(ids, id)
		return nil
	}))
	assert.Len(t, ids, scanPage+2)
	assert.Equal(t, fmt.Sprintf("%d-0", scanPage+2), ids[len(ids)-1])
	assert.Equal(t, []string{"XRANGE hopper:{b}:attempts - + COUNT 1000", "XRANGE hopper:{b}:attempts (1000-0 + COUNT 1000"},
		withPrefix(r.sentLines(), "XRANGE"))

	r.on("XRANGE "+replayKeys.Attempts, mock.RedisArray(mock.RedisArray(mock.RedisString("7-0"), bulks("json", "{}"))))
	var after []string
	require.NoError(t, b.ReadAttemptsAfter(context.Background(), "6-0", func(id, _ string, _ bool) error {
		after = append(after, id)
		return nil
	}))
	assert.Equal(t, []string{"7-0"}, after)
	assert.Contains(t, r.sentLines(), "XRANGE hopper:{b}:attempts (6-0 + COUNT 1000")
	assertOnlyReads(t, r)
}

// A reply no build's key gives is unreadable, and said so.
func TestObserversUnreadable(t *testing.T) {
	cases := []struct {
		name  string
		world func(r *replay)
		read  func(b *Build) error
	}{
		{"meta not a hash", func(r *replay) { r.on("HGETALL "+replayKeys.Meta, mock.RedisError("WRONGTYPE not a hash")) },
			func(b *Build) error { _, err := b.ReadPresence(context.Background()); return err }},
		{"TIME not numeric", func(r *replay) { r.on("TIME", bulks("soon", "0")) },
			func(b *Build) error { _, err := b.ReadPoll(context.Background()); return err }},
		{"workers not a hash", func(r *replay) { r.on("HGETALL "+replayKeys.Workers, mock.RedisError("WRONGTYPE not a hash")) },
			func(b *Build) error { _, err := b.ReadLook(context.Background()); return err }},
	}
	for _, c := range cases {
		r, b := observed(t)
		c.world(r)
		var re *ReadError
		require.ErrorAs(t, c.read(b), &re, c.name)
		assert.True(t, re.Unreadable(), c.name)
	}
}

// Counts that cannot be true are CORRUPT, never guessed.
func TestProgressRefusesImpossibleCounts(t *testing.T) {
	for _, counts := range [][]string{{"1", ""}, {"3", "2"}, {"x", "2"}, {"1", "two"}} {
		r, b := observed(t)
		r.on("HMGET "+replayKeys.Meta+" finalized_count total_units", hmgetReply(counts...))
		_, err := b.Progress(context.Background())
		assert.ErrorIs(t, err, ErrCorrupt, "%q", counts)
	}
}

// A build in a later round is followed in that round's keys.
func TestObserversFollowTheRound(t *testing.T) {
	r, b := observed(t)
	round := RoundKeys(buildID, 2)
	r.on("HGETALL "+replayKeys.Meta, hashReply(map[string]string{metaState: stateReady, metaRound: "2"}))
	r.on("HGET "+replayKeys.Meta+" round", mock.RedisString("2"))
	r.on("HGETALL "+round.Meta, hashReply(map[string]string{metaState: stateReady, metaTotalUnits: "1"}))
	r.onFunc("HMGET "+round.Meta, fieldsOf(map[string]string{metaState: stateReady, metaTotalUnits: "1"}))
	look, err := b.ReadLook(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, look.Round)
	assert.Equal(t, "1", look.Meta[metaTotalUnits], "the round's meta")
	cp, err := b.ReadCompletion(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Completion{Round: 2, Published: true, State: stateReady, Total: 1}, cp)
	r.on("HGETALL "+round.Meta, hashReply(nil))
	_, err = b.ReadLook(context.Background())
	assert.ErrorIs(t, err, ErrCorrupt, "a round whose meta is gone")
}
