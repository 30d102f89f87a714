package queue

import (
	"context"
	"testing"

	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptKeys are the six KEYS of the replayed build, as Transition takes
// them.
var scriptKeys = []string{replayKeys.Units, replayKeys.Priority, replayKeys.Attempts, replayKeys.Meta, replayKeys.UnitState, replayKeys.Workers}

// guarded records meta as hopper's Publish leaves it: ready, and marked
// guarded.
func guarded(r *replay) { r.on("HMGET "+replayKeys.Meta+" state guarded", hmgetReply("ready", "1")) }

const staleRejected = `{"type":"stale_rejected","unit_id":"u1","worker_id":"w1"}`

// Transition answers each mode as the transition script does, by the
// same decisions as the typed API, on either engine.
func TestTransitionReplies(t *testing.T) {
	cases := []struct {
		name  string
		world func(t *testing.T) *replay
		argv  []string
		want  []any
	}{
		{"accounting", heldReplay, []string{"delivery_accounting", "w1", "1000", "units", "1-0", "u1"}, []any{"OK", int64(1), int64(0), int64(0)}},
		{"heartbeat", heldReplay, []string{"heartbeat", "w1", "1000", "units", "1-0", "1", "u1"}, []any{"OK"}},
		{"finalize", heldReplay, []string{"finalize", "w1", "1000", "units", "1-0", "1", "u1", "passed", "12"}, []any{"OK"}},
		{"requeue", heldReplay, []string{"requeue", "w1", "1000", "units", "1-0", "1", "u1", "file", "2", "1", "3"}, []any{"REQUEUED", int64(1)}},
		{"requeue past budget", func(t *testing.T) *replay {
			r := heldReplay(t)
			r.onFunc("HMGET "+replayKeys.UnitState, each(`{"retry_index":2,"reclaim_count":0,"entered_retry":true}`))
			return r
		}, []string{"requeue", "w1", "1000", "units", "1-0", "1", "u1", "file", "2", "1", "3"}, []any{"FINALIZED", int64(2)}},
		{"abandoned", heldReplay, []string{"abandoned", "w1", "1000", "units", "1-0", "1", "u1", "99"}, []any{"OK"}},
		{"liveness", heldReplay, []string{"liveness", "w1", "1000", "u1"}, []any{"OK"}},
		{"stale_rejected", heldReplay, []string{"stale_rejected", "w1", "1000", staleRejected}, []any{"OK"}},
		{"stale", heldReplay, []string{"heartbeat", "w1", "1000", "units", "1-0", "2", "u1"}, []any{"STALE"}},
		{"corrupt", func(t *testing.T) *replay {
			r := heldReplay(t)
			r.on("HMGET "+replayKeys.Meta+" state guarded", hmgetReply("", ""))
			return r
		}, []string{"finalize", "w1", "1000", "units", "1-0", "1", "u1", "passed", "12"}, []any{"CORRUPT"}},
		{"reclaim taken", idleReplay, []string{"reclaim", "w1", "1000", "60000", "3"},
			[]any{"OK", "units", "2-0", "u2", "file", int64(2), int64(0), int64(1)}},
		{"reclaim of an entry without a type", func(t *testing.T) *replay {
			r := idleReplay(t)
			r.on("XRANGE "+replayKeys.Units+" 2-0 2-0", entryReply("2-0", "id", "u2"))
			return r
		}, []string{"reclaim", "w1", "1000", "60000", "3"}, []any{"OK", "units", "2-0", "u2"}},
		{"reclaim finalized", func(t *testing.T) *replay {
			r := idleReplay(t)
			r.on("HGET "+replayKeys.Meta+" max_reclaims", mock.RedisNil())
			return r
		}, []string{"reclaim", "w1", "1000", "60000", "0"}, []any{"FINALIZED", "u2"}},
		{"reclaim none", heldReplay, []string{"reclaim", "w1", "1000", "60000", "3"}, []any{"NONE"}},
	}
	for _, c := range cases {
		for _, e := range engines {
			t.Run(c.name+"/"+string(e), func(t *testing.T) {
				t.Setenv(engineEnv, string(e)) // Transition's Builds take their engine from there
				r := c.world(t)
				got, err := Transition(context.Background(), r, scriptKeys, c.argv)
				require.NoError(t, err)
				assert.Equal(t, c.want, got)
				if got[0] == "STALE" || got[0] == "CORRUPT" || got[0] == "NONE" {
					assert.Empty(t, r.committed())
				} else {
					assert.Contains(t, r.lastCommit(), "PEXPIRE "+replayKeys.Meta+" 1000", "the caller's TTL")
				}
			})
		}
	}
}

// heldReplay and idleReplay are heldUnit and idleUnit, guarded, for
// Transition, which opens its own Builds.
func heldReplay(t *testing.T) *replay { r, _ := heldUnit(t); guarded(r); return r }
func idleReplay(t *testing.T) *replay { r, _ := idleUnit(t); guarded(r); return r }

// A build not marked guarded may have callers of the script, which
// writes no guards: every mode that reads meta is refused, writing
// nothing; prebuilt events, which read no meta, are let through.
func TestTransitionRefusesUnguardedBuilds(t *testing.T) {
	for _, argv := range [][]string{
		{"heartbeat", "w1", "1000", "units", "1-0", "1", "u1"},
		{"finalize", "w1", "1000", "units", "1-0", "1", "u1", "passed", "12"},
		{"liveness", "w1", "1000"},
		{"reclaim", "w1", "1000", "60000", "3"},
	} {
		r := heldReplay(t)
		r.on("HMGET "+replayKeys.Meta+" state guarded", hmgetReply("ready", ""))
		_, err := Transition(context.Background(), r, scriptKeys, argv)
		assert.ErrorIs(t, err, ErrUnguarded, argv[0])
		assert.Empty(t, r.committed(), argv[0])
	}
	r := heldReplay(t)
	got, err := Transition(context.Background(), r, scriptKeys, []string{"stale_rejected", "w1", "1000", staleRejected})
	require.NoError(t, err)
	assert.Equal(t, []any{"OK"}, got)
}

func TestTransitionRefusesBadCalls(t *testing.T) {
	r := heldReplay(t)
	cases := []struct {
		keys, argv []string
	}{
		{scriptKeys[:5], []string{"liveness", "w1", "1000"}},
		{append([]string{""}, scriptKeys[1:]...), []string{"liveness", "w1", "1000"}},
		{scriptKeys, []string{"teleport", "w1", "1000"}},
		{scriptKeys, nil},
	}
	for _, c := range cases {
		_, err := Transition(context.Background(), r, c.keys, c.argv)
		assert.ErrorIs(t, err, ErrInvalidArgument, "%q %q", c.keys, c.argv)
	}
	var unknown UnknownModeError
	_, err := Transition(context.Background(), r, scriptKeys, []string{"teleport", "w1", "1000"})
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, "ERR unknown transition mode teleport", unknown.Error())
	assert.Empty(t, r.sentLines(), "refused before anything is sent")
}

// Calls on one client, keys and TTL share one Build, and so its memory
// of the entries its workers read.
func TestTransitionSharesOneBuild(t *testing.T) {
	onDefaultEngine(t)
	r := heldReplay(t)
	ctx := context.Background()
	for range 2 {
		got, err := Transition(ctx, r, scriptKeys, []string{"delivery_accounting", "w1", "1000", "units", "1-0", "u1"})
		require.NoError(t, err)
		require.Equal(t, "OK", got[0])
	}
	assert.Len(t, withPrefix(r.sentLines(), "XRANGE "+replayKeys.Units+" 1-0"), 1, "the entry's unit ranged once, then remembered")
}
