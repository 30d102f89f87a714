package queue

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Where a worker's stream reads go: the priority stream's without
// waiting, the units stream's with BLOCK.
const (
	readPriority = "XREADGROUP GROUP workers w1 COUNT "
	readUnits    = "XREADGROUP GROUP workers w1 COUNT 1 BLOCK "
)

// xreadReply is an XREADGROUP reply of entries of one stream, each an id
// and its unit's fields (id, then type when not empty).
func xreadReply(key string, entries ...[3]string) rueidis.RedisMessage {
	msgs := make([]rueidis.RedisMessage, len(entries))
	for i, e := range entries {
		fields := []string{"id", e[1]}
		if e[2] != "" {
			fields = append(fields, "type", e[2])
		}
		msgs[i] = mock.RedisArray(mock.RedisString(e[0]), bulks(fields...))
	}
	return mock.RedisArray(mock.RedisArray(mock.RedisString(key), mock.RedisArray(msgs...)))
}

// freshUnits records a build with nothing idle, no requeued unit, and
// units u3 and u4 (entries 3-0 and 4-0) new on the units stream, which w1
// is the first to read.
func freshUnits(t *testing.T) (*replay, *Build) {
	r, b := heldUnit(t)
	r.onFunc("XREADGROUP", func(words []string) rueidis.RedisResult {
		line := strings.Join(words, " ")
		if !strings.HasSuffix(line, replayKeys.Units+" >") {
			return mock.Result(mock.RedisNil())
		}
		all := [][3]string{{"3-0", "u3", "file"}, {"4-0", "u4", ""}}
		if strings.Contains(line, " COUNT 1 ") {
			all = all[:1]
		}
		return mock.Result(xreadReply(replayKeys.Units, all...))
	})
	for _, id := range []string{"3-0", "4-0"} {
		r.on("XPENDING "+replayKeys.Units+" workers "+id+" "+id+" 1", pendingReply(pendingAt{id, "w1", 0, 1}))
	}
	return r, b
}

func TestReserveTakesANewUnit(t *testing.T) {
	r, b := freshUnits(t)
	got, ok, err := b.Reserve(context.Background(), "w1", ReserveOptions{})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Reservation{WorkerID: "w1", Stream: StreamUnits, EntryID: "3-0", UnitID: "u3", UnitType: "file", DeliveryCount: 1}, got)
	sent := r.sentLines()
	priority, units := indexWithPrefix(sent, readPriority), indexWithPrefix(sent, readUnits)
	assert.True(t, priority >= 0 && units > priority, "the priority stream first: %q", sent)
	assert.Contains(t, sent, readUnits+"1000 STREAMS hopper:{b}:units >", "waiting DefaultBlock")
	assert.Equal(t, events.TypeDelivered, eventOf(t, r.lastCommit()).Type, "accounted for")
}

// A Build remembers the unit of each entry its workers read: the
// accounting does not range the entry again.
func TestReserveRemembersTheEntriesItReads(t *testing.T) {
	onDefaultEngine(t)
	r, b := freshUnits(t)
	_, ok, err := b.Reserve(context.Background(), "w1", ReserveOptions{})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, withPrefix(r.sentLines(), "XRANGE hopper:{b}:units 3-0"))
}

func TestReserveBatchAccountsForEachEntry(t *testing.T) {
	r, b := freshUnits(t)
	rs, err := b.ReserveBatch(context.Background(), "w1", 2, ReserveOptions{})
	require.NoError(t, err)
	require.Len(t, rs, 2)
	assert.Equal(t, "u3", rs[0].UnitID)
	assert.Equal(t, "u4", rs[1].UnitID)
	assert.Equal(t, DefaultUnitType, rs[1].UnitType, "an entry without a type is of the default type")
	assert.Len(t, r.committed(), 2, "a delivered event each")
}

// The priority stream's units, requeued, are served before new ones.
func TestReservePriorityFirst(t *testing.T) {
	r, b := freshUnits(t)
	r.on(readPriority+"1 STREAMS "+replayKeys.Priority, xreadReply(replayKeys.Priority, [3]string{"9-0", "u9", "file"}))
	r.on("XPENDING "+replayKeys.Priority+" workers 9-0", pendingReply(pendingAt{"9-0", "w1", 0, 1}))
	got, ok, err := b.Reserve(context.Background(), "w1", ReserveOptions{})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, StreamPriority, got.Stream)
	assert.Equal(t, "u9", got.UnitID)
	assert.Empty(t, withPrefix(r.sentLines(), readUnits), "the units stream not read")
}

// An entry reclaimed between the read and its accounting gives nothing,
// and records nothing.
func TestReserveLosesARace(t *testing.T) {
	r, b := freshUnits(t)
	r.on("XPENDING "+replayKeys.Units+" workers 3-0", pendingReply(pendingAt{"3-0", "w2", 0, 2}))
	_, ok, err := b.Reserve(context.Background(), "w1", ReserveOptions{})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Empty(t, r.committed())
}

// A silent owner's unit is reclaimed before any new unit is read.
func TestReserveReclaimsFirst(t *testing.T) {
	r, b := idleUnit(t)
	got, ok, err := b.Reserve(context.Background(), "w1", ReserveOptions{Timeout: reclaimTimeout})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "u2", got.UnitID)
	assert.Equal(t, int64(2), got.DeliveryCount)
	assert.Empty(t, withPrefix(r.sentLines(), "XREADGROUP"))
}

func TestReserveRefusals(t *testing.T) {
	cases := []struct {
		name  string
		world func(r *replay)
		want  error
	}{
		{"meta gone", func(r *replay) { r.on("HEXISTS "+replayKeys.Meta, mock.RedisInt64(0)) }, ErrCorrupt},
		{"no consumer group", func(r *replay) {
			r.on(readUnits, mock.RedisError("NOGROUP No such key or consumer group"))
		}, ErrCorrupt},
		{"an entry naming no unit", func(r *replay) {
			r.on(readUnits, mock.RedisArray(mock.RedisArray(mock.RedisString(replayKeys.Units),
				mock.RedisArray(mock.RedisArray(mock.RedisString("3-0"), bulks("type", "file"))))))
		}, ErrCorrupt},
	}
	for _, c := range cases {
		r, b := freshUnits(t)
		c.world(r)
		_, ok, err := b.Reserve(context.Background(), "w1", ReserveOptions{})
		assertRefused(t, r, err, c.want, c.name)
		assert.False(t, ok, c.name)
	}
	r, b := freshUnits(t)
	for _, bad := range []func() error{
		func() error { _, err := b.ReserveBatch(context.Background(), "", 1, ReserveOptions{}); return err },
		func() error { _, err := b.ReserveBatch(context.Background(), "w1", 0, ReserveOptions{}); return err },
		func() error {
			_, err := b.ReserveBatch(context.Background(), "w1", 1, ReserveOptions{Timeout: time.Microsecond})
			return err
		},
		func() error {
			_, err := b.ReserveBatch(context.Background(), "w1", 1, ReserveOptions{Block: time.Microsecond})
			return err
		},
	} {
		assert.ErrorIs(t, bad(), ErrInvalidArgument)
	}
	assert.Empty(t, r.sentLines())
}

func TestReserveOptionsDefaults(t *testing.T) {
	o, err := ReserveOptions{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, ReserveOptions{Timeout: DefaultTimeout, MaxReclaims: DefaultMaxReclaims, Block: DefaultBlock}, o)
	o, err = ReserveOptions{MaxReclaims: -1}.withDefaults()
	require.NoError(t, err)
	assert.Zero(t, o.MaxReclaims, "negative: no reclaim")
	assert.Equal(t, time.Duration(1<<63-1), readBound(1<<63-1), "a Block near the largest does not wrap")
}

// With ReadAhead, the settlement of the last unit carries the next
// reservation's reads behind its EXEC, and that reservation starts from
// their replies: its entry, pending under the worker already, comes
// first, with no read of its own.
func TestReadAheadServesTheNextReservation(t *testing.T) {
	onDefaultEngine(t)
	r, b := freshUnits(t)
	ctx := context.Background()
	opts := ReserveOptions{ReadAhead: true}
	got, ok, err := b.Reserve(ctx, "w1", opts)
	require.NoError(t, err)
	require.True(t, ok)
	r.on(readPriority+"1 STREAMS "+replayKeys.Priority, xreadReply(replayKeys.Priority, [3]string{"9-0", "u9", "file"}))
	r.on("XPENDING "+replayKeys.Priority+" workers 9-0", pendingReply(pendingAt{"9-0", "w1", 0, 1}))
	require.NoError(t, b.Finalize(ctx, got, Result{Outcome: events.OutcomePassed}))
	settled := r.sentLines()
	exec := indexWithPrefix(settled, "EXEC")
	require.Positive(t, exec)
	assert.Contains(t, settled[exec:], readPriority+"1 STREAMS hopper:{b}:units:priority >", "read behind the settlement's EXEC")
	next, ok, err := b.Reserve(ctx, "w1", opts)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "u9", next.UnitID, "the entry the read ahead delivered")
	assert.Empty(t, withPrefix(r.sentLines()[len(settled):], "XREADGROUP"), "no read of its own")
}
