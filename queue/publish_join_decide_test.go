package queue

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var suite = Manifest{UnitIDs: []string{"./api", "./db"}}

// unpublished records a build no one published yet. Its leader key
// keeps the token of the lease taken, and its meta and tombstone read
// back what a commit wrote, so that Join sees its own publish.
func unpublished(t *testing.T) (*replay, *Build) {
	r := newReplay(t)
	var mu sync.Mutex
	leader := ""
	r.onFunc("SET "+replayKeys.Leader+" ", func(words []string) rueidis.RedisResult {
		mu.Lock()
		defer mu.Unlock()
		if leader != "" {
			return mock.Result(mock.RedisNil()) // NX: held
		}
		leader = words[2]
		return mock.Result(mock.RedisString("OK"))
	})
	r.onFunc("GET "+replayKeys.Leader, func([]string) rueidis.RedisResult {
		mu.Lock()
		defer mu.Unlock()
		return mock.Result(mock.RedisString(leader))
	})
	r.onFunc("HGETALL "+replayKeys.Meta, func([]string) rueidis.RedisResult {
		return mock.Result(hashReply(r.hashWritten(replayKeys.Meta)))
	})
	r.onFunc("EXISTS "+replayKeys.Meta, func([]string) rueidis.RedisResult {
		return mock.Result(mock.RedisInt64(int64(min(1, len(r.hashWritten(replayKeys.Meta))))))
	})
	r.on("TYPE "+replayKeys.UnitState, mock.RedisString("none"))
	b, err := Open(r, buildID, Options{})
	require.NoError(t, err)
	return r, b
}

// hashReply is an HGETALL reply of h.
func hashReply(h map[string]string) rueidis.RedisMessage {
	m := make(map[string]rueidis.RedisMessage, len(h))
	for k, v := range h {
		m[k] = mock.RedisString(v)
	}
	return mock.RedisMap(m)
}

// publishedBy is meta as hopper's Publish leaves it for m, published
// with lease token.
func publishedBy(t *testing.T, m Manifest, token string) map[string]string {
	f := publishedMeta(t, m)
	f[metaPublisher], f[metaGuarded] = token, guardedMark
	return f
}

// The first worker to come publishes: both streams made afresh, the units
// queued in order with zeroed states, meta written ready and marked
// guarded, the id burnt by a tombstone, all in one commit.
func TestJoinPublishesWhenFirst(t *testing.T) {
	r, b := unpublished(t)
	j, err := b.Join(context.Background(), "w1", suite, JoinOptions{})
	require.NoError(t, err)
	assert.True(t, j.Published)
	assert.Equal(t, suite.UnitIDs, j.Manifest.UnitIDs)
	assert.Equal(t, int64(serverTimeMS), j.ReadyAtMS)
	commits := r.committed()
	require.Len(t, commits, 1)
	c := commits[0]
	assert.Equal(t, "DEL hopper:{b}:units hopper:{b}:units:priority", c[0])
	assert.Contains(t, c, "XGROUP CREATE hopper:{b}:units workers 0 MKSTREAM")
	assert.Contains(t, c, "XGROUP CREATE hopper:{b}:units:priority workers 0 MKSTREAM")
	adds := withPrefix(c, "XADD hopper:{b}:units * ")
	assert.Equal(t, []string{"XADD hopper:{b}:units * id ./api type file", "XADD hopper:{b}:units * id ./db type file"}, adds)
	assert.Contains(t, c, `HSET hopper:{b}:unit_state ./api {"retry_index":0,"reclaim_count":0,"entered_retry":false} ./db {"retry_index":0,"reclaim_count":0,"entered_retry":false}`)
	assert.Contains(t, c, "SET hopper:{b}:exists 1 PX 604800000")
	meta := r.hashWritten(replayKeys.Meta)
	assert.Equal(t, stateReady, meta[metaState])
	assert.Equal(t, guardedMark, meta[metaGuarded])
	assert.True(t, strings.HasPrefix(meta[metaPublisher], "w1:"), meta[metaPublisher])
}

// A worker that comes second runs what the first published.
func TestJoinLoadsAnothersBuild(t *testing.T) {
	r, b := unpublished(t)
	r.on("HGETALL "+replayKeys.Meta, hashReply(publishedBy(t, suite, "w0:0123456789abcdef")))
	j, err := b.Join(context.Background(), "w1", suite, JoinOptions{})
	require.NoError(t, err)
	assert.False(t, j.Published)
	assert.Equal(t, suite.UnitIDs, j.Manifest.UnitIDs)
	assert.Empty(t, withPrefix(r.sentLines(), "SET "+replayKeys.Leader), "no lease tried")
}

func TestJoinRefusals(t *testing.T) {
	other := Manifest{UnitIDs: []string{"./api", "./web"}}
	failed := publishedBy(t, suite, "w0:0123456789abcdef")
	failed[metaState], failed[metaLoadErrors] = stateInitFailed, `["cannot load ./db"]`
	cases := []struct {
		name  string
		world func(r *replay)
		opts  JoinOptions
		want  error
	}{
		{"another suite", func(r *replay) {
			r.on("HGETALL "+replayKeys.Meta, hashReply(publishedBy(t, other, "w0:0123456789abcdef")))
		},
			JoinOptions{}, ErrFingerprintMismatch},
		{"published in failure mode", func(r *replay) { r.on("HGETALL "+replayKeys.Meta, hashReply(failed)) }, JoinOptions{}, ErrInitFailed},
		{"burnt", func(r *replay) { r.on("EXISTS "+replayKeys.Exists, mock.RedisInt64(1)) }, JoinOptions{}, ErrBuildBurnt},
		{"lease held, never published", func(r *replay) { r.on("SET "+replayKeys.Leader+" ", mock.RedisNil()) },
			JoinOptions{InitTimeout: time.Millisecond, PollInterval: time.Millisecond}, ErrNeverInitialized},
		{"bad options", func(*replay) {}, JoinOptions{PollInterval: time.Microsecond}, ErrInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, b := unpublished(t)
			c.world(r)
			_, err := b.Join(context.Background(), "w1", suite, c.opts)
			assert.ErrorIs(t, err, c.want)
			if c.want == ErrFingerprintMismatch {
				var mm *FingerprintMismatchError
				require.True(t, errors.As(err, &mm))
				assert.Contains(t, mm.Inputs, "unit_ids")
				assert.Equal(t, events.TypeWorkerError, eventOf(t, r.lastCommit()).Type, "why it will not run, in the log")
				return
			}
			assert.Empty(t, r.committed(), "nothing written")
		})
	}
}

// Publish's checks, each refusing before anything is written.
func TestPublishRefusals(t *testing.T) {
	cases := []struct {
		name  string
		world func(r *replay)
		want  error
	}{
		{"lease lost", func(r *replay) { r.on("GET "+replayKeys.Leader, mock.RedisString("w2:0123456789abcdef")) }, ErrLeaseLost},
		{"burnt", func(r *replay) { r.on("EXISTS "+replayKeys.Exists, mock.RedisInt64(1)) }, ErrBuildBurnt},
		{"published", func(r *replay) { r.on("EXISTS "+replayKeys.Meta, mock.RedisInt64(1)) }, ErrAlreadyPublished},
		{"unit states not a hash", func(r *replay) { r.on("TYPE "+replayKeys.UnitState, mock.RedisString("string")) }, ErrCorrupt},
	}
	for _, c := range cases {
		r, b := unpublished(t)
		l, won, err := b.TryLease(context.Background(), "w1", 0)
		require.NoError(t, err)
		require.True(t, won)
		c.world(r)
		assert.ErrorIs(t, b.Publish(context.Background(), l, suite, 0), c.want, c.name)
		assert.Empty(t, r.committed(), c.name)
	}
}

// A manifest with load errors is published in failure mode: meta says
// init_failed, and no unit is queued.
func TestPublishInFailureMode(t *testing.T) {
	r, b := unpublished(t)
	l, _, err := b.TryLease(context.Background(), "w1", 0)
	require.NoError(t, err)
	m := suite
	m.LoadErrors = []string{"cannot load ./db"}
	require.NoError(t, b.Publish(context.Background(), l, m, time.Hour))
	assert.Equal(t, stateInitFailed, r.hashWritten(replayKeys.Meta)[metaState])
	assert.Empty(t, withPrefix(r.lastCommit(), "XADD"))
	assert.Contains(t, r.lastCommit(), "SET hopper:{b}:exists 1 PX 3600000")
}

// A publish whose reply was lost looks at meta: its own token there, it
// applied.
func TestPublishLostReplyResolvedByMeta(t *testing.T) {
	r, b := unpublished(t)
	l, _, err := b.TryLease(context.Background(), "w1", 0)
	require.NoError(t, err)
	r.lost = 1
	r.on("HGETALL "+replayKeys.Meta, hashReply(publishedBy(t, suite, l.Token)))
	assert.NoError(t, b.Publish(context.Background(), l, suite, 0))
	r.on("HGETALL "+replayKeys.Meta, hashReply(publishedBy(t, suite, "w2:0123456789abcdef")))
	r.lost = 1
	assert.ErrorIs(t, b.Publish(context.Background(), l, suite, 0), ErrAlreadyPublished, "another's: this one never applies")
}

func TestTryLease(t *testing.T) {
	r, b := unpublished(t)
	l, won, err := b.TryLease(context.Background(), "w1", 1500*time.Millisecond)
	require.NoError(t, err)
	assert.True(t, won)
	assert.Equal(t, "w1", l.WorkerID())
	assert.NoError(t, l.check())
	assert.Equal(t, "SET hopper:{b}:leader "+l.Token+" NX PX 1500", r.sentLines()[0], "PX when not whole seconds")
	_, won, err = b.TryLease(context.Background(), "w2", time.Minute)
	require.NoError(t, err)
	assert.False(t, won, "held")
	assert.Equal(t, "NX EX 60", strings.Join(strings.Fields(r.sentLines()[1])[3:], " "))
	_, _, err = b.TryLease(context.Background(), "w2", time.Microsecond)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.ErrorIs(t, b.Publish(context.Background(), Lease{Token: "w1:XYZ"}, suite, 0), ErrInvalidArgument)
	sk, err := OpenKeys(r, mustScriptKeys(t), Options{})
	require.NoError(t, err)
	_, _, err = sk.TryLease(context.Background(), "w1", 0)
	assert.ErrorIs(t, err, ErrInvalidArgument, "Transition's keys name no leader")
}

func mustScriptKeys(t *testing.T) Keys {
	k, err := ScriptKeys(scriptKeys)
	require.NoError(t, err)
	return k
}

// The publisher may queue the units in an order of its own (its
// timings'); meta keeps the manifest's.
func TestPublishServeOrder(t *testing.T) {
	r, b := unpublished(t)
	l, _, err := b.TryLease(context.Background(), "w1", 0)
	require.NoError(t, err)
	m := suite
	m.Serve = []string{"./db", "./api"}
	require.NoError(t, b.Publish(context.Background(), l, m, 0))
	assert.Equal(t, []string{"XADD hopper:{b}:units * id ./db type file", "XADD hopper:{b}:units * id ./api type file"},
		withPrefix(r.lastCommit(), "XADD"))
	assert.Equal(t, `["./api","./db"]`, r.hashWritten(replayKeys.Meta)[metaUnitIDs])
	for _, serve := range [][]string{{"./db"}, {"./db", "./web"}, {"./db", "./db"}} {
		m.Serve = serve
		assert.ErrorIs(t, b.Publish(context.Background(), l, m, 0), ErrInvalidArgument, "%q", serve)
	}
}
