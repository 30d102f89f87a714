package queue

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
)

// fencedCall is one fenced transition of package queue, called on r.
type fencedCall struct {
	mode string
	call func(ctx context.Context, b *Build, r Reservation) error
}

var fencedCalls = []fencedCall{
	{ModeDeliveryAccounting, func(ctx context.Context, b *Build, r Reservation) error {
		_, err := b.AccountDelivery(ctx, r.WorkerID, r.Stream, r.EntryID, r.UnitID)
		return err
	}},
	{ModeHeartbeat, func(ctx context.Context, b *Build, r Reservation) error { return b.Heartbeat(ctx, r) }},
	{ModeFinalize, func(ctx context.Context, b *Build, r Reservation) error {
		return b.Finalize(ctx, r, Result{Outcome: "passed", DurationMS: 12})
	}},
	{ModeRequeue, func(ctx context.Context, b *Build, r Reservation) error {
		_, err := b.Requeue(ctx, r, Result{DurationMS: 3}, Budgets{MaxRequeues: 2, RequeueTolerance: 1})
		return err
	}},
	{ModeAbandoned, func(ctx context.Context, b *Build, r Reservation) error { return b.Abandon(ctx, r, 99) }},
}

// engines are the engines a decision must be taken alike on.
var engines = []Engine{EngineDefault, EngineInline}

// errDecodes stands for an error that is none of the sentinels: a record
// that cannot be decoded is reported as it is.
var errDecodes = errors.New("a decoding error")

// assertRefused checks that err is the refusal want (errDecodes: an
// error that is no sentinel), and that nothing was committed.
func assertRefused(t *testing.T, r *replay, err, want error, msgs ...any) {
	t.Helper()
	if want != errDecodes {
		assert.ErrorIs(t, err, want, msgs...)
	} else if assert.Error(t, err, msgs...) {
		for _, s := range []error{ErrStale, ErrCorrupt, ErrInvalidArgument} {
			assert.NotErrorIs(t, err, s, msgs...)
		}
	}
	assert.Empty(t, r.committed(), "a refusal writes nothing")
}

// Every fenced transition refuses, writing nothing, what its reads say it
// must: the checks come in their fixed order (docs/design.md#transitions),
// and the heartbeat alone decides on the pending row without the unit's
// state or entry.
func TestFencedRefusals(t *testing.T) {
	cases := []struct {
		name   string
		world  func(r *replay)
		want   error            // of every mode but those in except
		except map[string]error // nil: the mode commits
	}{
		{"meta gone", func(r *replay) { r.on("HEXISTS "+replayKeys.Meta, mock.RedisInt64(0)) }, ErrCorrupt, nil},
		{"reclaimed by w2", func(r *replay) {
			r.on("XPENDING "+replayKeys.Units, pendingReply(pendingAt{"1-0", "w2", 0, 2}))
		}, ErrStale, nil},
		{"settled", func(r *replay) { r.on("XPENDING "+replayKeys.Units, pendingReply()) }, ErrStale, nil},
		{"delivered again to w1", func(r *replay) {
			r.on("XPENDING "+replayKeys.Units, pendingReply(pendingAt{"1-0", "w1", 0, 2}))
		}, ErrStale, map[string]error{ModeDeliveryAccounting: nil}},
		{"state missing", func(r *replay) { r.on("HMGET "+replayKeys.UnitState, mock.RedisArray(mock.RedisNil())) },
			ErrCorrupt, map[string]error{ModeHeartbeat: nil}},
		{"state unreadable", func(r *replay) { r.onFunc("HMGET "+replayKeys.UnitState, each("{")) },
			errDecodes, map[string]error{ModeHeartbeat: nil}},
		{"entry carries u2", func(r *replay) { r.on("XRANGE "+replayKeys.Units, entryReply("1-0", "id", "u2")) },
			ErrInvalidArgument, map[string]error{ModeHeartbeat: nil}},
		{"entry names no unit", func(r *replay) { r.on("XRANGE "+replayKeys.Units, entryReply("1-0", "type", "file")) },
			ErrInvalidArgument, map[string]error{ModeHeartbeat: nil}},
		{"worker record unreadable", func(r *replay) { r.onFunc("HMGET "+replayKeys.Workers, each("[")) }, errDecodes, nil},
		{"stale whatever the records hold", func(r *replay) {
			r.on("XPENDING "+replayKeys.Units, pendingReply())
			r.onFunc("HMGET "+replayKeys.UnitState, each("{"))
			r.onFunc("HMGET "+replayKeys.Workers, each("["))
		}, ErrStale, nil},
	}
	for _, c := range cases {
		for _, f := range fencedCalls {
			for _, e := range engines {
				t.Run(c.name+"/"+f.mode+"/"+string(e), func(t *testing.T) {
					r, b := heldUnitWith(t, Options{Engine: e})
					c.world(r)
					want, ok := c.except[f.mode]
					if !ok {
						want = c.want
					}
					err := f.call(context.Background(), b, w1u1)
					if want == nil {
						assert.NoError(t, err)
						assert.Len(t, r.committed(), 1)
						return
					}
					assertRefused(t, r, err, want)
				})
			}
		}
	}
}

// Arguments the typed API refuses are refused before anything is sent.
func TestFencedBadArgumentsSendNothing(t *testing.T) {
	bad := []Reservation{
		{},
		{WorkerID: "w1", Stream: "elsewhere", EntryID: "1-0", UnitID: "u1", DeliveryCount: 1},
		{WorkerID: "w1", Stream: StreamUnits, EntryID: "one", UnitID: "u1", DeliveryCount: 1},
		{WorkerID: "w1", Stream: StreamUnits, EntryID: "1-0", DeliveryCount: 1},
	}
	for _, res := range bad {
		for _, f := range fencedCalls {
			r, b := heldUnit(t)
			assert.ErrorIs(t, f.call(context.Background(), b, res), ErrInvalidArgument, "%s of %+v", f.mode, res)
			assert.Empty(t, r.sentLines(), "%s of %+v", f.mode, res)
		}
	}
}
