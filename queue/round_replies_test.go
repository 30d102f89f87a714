package queue

import (
	"context"
	"testing"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// finishedRound records a build whose one round is complete, as attempt 1
// of CI job "job" ran it: u1 passed, u2 failed.
func finishedRound(t *testing.T) (*replay, *Build) {
	r := newReplay(t)
	meta := map[string]string{metaState: stateReady, metaTotalUnits: "2", metaFinalized: "2", metaUnitIDs: `["u1","u2"]`,
		metaUnitType: "file", metaCIPrefix + "job": "1"}
	r.on("HGETALL "+replayKeys.Meta, hashReply(meta))
	r.on("XRANGE "+replayKeys.Attempts, finalizedLog(t, events.OutcomePassed, events.OutcomeFailed))
	b, err := Open(r, buildID, Options{})
	require.NoError(t, err)
	return r, b
}

// finalizedLog is an attempt log in which u1, then u2, were finalized
// with outcomes.
func finalizedLog(t *testing.T, outcomes ...string) rueidis.RedisMessage {
	log := make([]rueidis.RedisMessage, 0, len(outcomes))
	for i, outcome := range outcomes {
		unit := []string{"u1", "u2"}[i]
		ev, err := events.Finalized{Head: events.Head{UnitID: unit, WorkerID: "w1", AtMS: 1}, Outcome: outcome,
			Stream: "units", EntryID: "1-0"}.Encode()
		require.NoError(t, err)
		log = append(log, mock.RedisArray(mock.RedisString([]string{"1-0", "2-0"}[i]), bulks("json", string(ev))))
	}
	return mock.RedisArray(log...)
}

// A retry of a CI job that ran a failed round opens the next round with
// the units that did not pass; the others join the round as it is.
func TestEnterRound(t *testing.T) {
	cases := []struct {
		name   string
		world  func(r *replay)
		sig    RetrySignal
		want   Entered
		record string // the CI attempt recorded outside a round's opening
	}{
		{"the job's retry opens round 2", nil, RetrySignal{Slot: "job", Attempt: "2"}, Entered{Round: 2, Opened: true, Units: []string{"u2"}}, ""},
		{"forced", nil, RetrySignal{Force: true}, Entered{Round: 2, Opened: true, Units: []string{"u2"}}, ""},
		{"the same attempt joins", nil, RetrySignal{Slot: "job", Attempt: "1"}, Entered{Round: 1}, "HSET hopper:{b}:meta ci:job 1"},
		{"another job joins", nil, RetrySignal{Slot: "other", Attempt: "7"}, Entered{Round: 1}, "HSET hopper:{b}:meta ci:other 7"},
		{"a round still running is joined", func(r *replay) {
			r.on("HGETALL "+replayKeys.Meta, hashReply(map[string]string{metaState: stateReady, metaTotalUnits: "2", metaFinalized: "1"}))
		}, RetrySignal{Force: true}, Entered{Round: 1}, ""},
		{"a round that passed opens nothing", func(r *replay) {
			r.on("XRANGE "+replayKeys.Attempts, finalizedLog(t, events.OutcomePassed, events.OutcomePassed))
		}, RetrySignal{Force: true}, Entered{Round: 1}, ""},
		{"units never finalized run again", func(r *replay) { r.on("XRANGE "+replayKeys.Attempts, mock.RedisArray()) },
			RetrySignal{Force: true}, Entered{Round: 2, Opened: true, Units: []string{"u1", "u2"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, b := finishedRound(t)
			if c.world != nil {
				c.world(r)
			}
			e, err := b.EnterRound(context.Background(), "w1", c.sig)
			require.NoError(t, err)
			assert.Equal(t, c.want, e)
			if c.record != "" {
				assert.Contains(t, r.sentLines(), c.record)
			}
			if !e.Opened {
				assert.Empty(t, r.committed())
				return
			}
			next := RoundKeys(buildID, 2)
			commit := r.lastCommit()
			assert.Equal(t, "HSET hopper:{b}:meta round 2", commit[0])
			assert.Contains(t, commit, "XGROUP CREATE "+next.Units+" workers 0 MKSTREAM")
			assert.Equal(t, len(c.want.Units), len(withPrefix(commit, "XADD "+next.Units+" * id ")))
			assert.Equal(t, "2", r.hashWritten(next.Meta)[metaRound])
			assert.Equal(t, events.TypeRoundOpened, eventOf(t, commit).Type)
		})
	}
}

func TestEnterRoundRefusesACorruptRound(t *testing.T) {
	r, b := finishedRound(t)
	r.on("HGETALL "+replayKeys.Meta, hashReply(map[string]string{metaRound: "zero"}))
	_, err := b.EnterRound(context.Background(), "w1", RetrySignal{Force: true})
	assert.ErrorIs(t, err, ErrCorrupt)
	next, err := b.Round(2)
	require.NoError(t, err)
	assert.Equal(t, RoundKeys(buildID, 2), next.Keys())
}
