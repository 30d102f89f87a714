package queue

import (
	"slices"
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/require"
)

// The build most replayed tests decide on: worker w1 holds unit u1 (type
// "file") on entry 1-0 of the units stream, delivered once; the unit has
// never been retried nor reclaimed, and w1 has processed two units. Meta
// allows 2 retries per unit and 5 of its 10 units in retry, none yet.
const (
	heldRecord = `{"last_seen":1,"current_unit":"u1","processed":2}`
	heldState  = `{"retry_index":0,"reclaim_count":0,"entered_retry":false}`
)

var replayKeys = BuildKeys(buildID)

// w1u1 is w1's reservation of u1.
var w1u1 = Reservation{WorkerID: "w1", Stream: StreamUnits, EntryID: "1-0", UnitID: "u1", UnitType: "file", DeliveryCount: 1}

// heldUnit records the replies of that build, and opens it.
func heldUnit(t *testing.T) (*replay, *Build) { return heldUnitWith(t, Options{}) }

// heldUnitWith is heldUnit, the build opened with opts.
func heldUnitWith(t *testing.T, opts Options) (*replay, *Build) {
	r := newReplay(t)
	r.on("HEXISTS "+replayKeys.Meta+" state", mock.RedisInt64(1))
	r.onFunc("HMGET "+replayKeys.Workers, each(heldRecord))
	r.onFunc("HMGET "+replayKeys.UnitState, each(heldState))
	r.on("XPENDING "+replayKeys.Units+" workers 1-0 1-0 1", pendingReply(pendingAt{"1-0", "w1", 5, 1}))
	r.on("XRANGE "+replayKeys.Units+" 1-0 1-0", entryReply("1-0", "id", "u1", "type", "file"))
	r.on("HMGET "+replayKeys.Meta+" max_requeues", bulks("2", "0.5", "10", "0"))
	b, err := Open(r, buildID, opts)
	require.NoError(t, err)
	return r, b
}

// each answers an HMGET with v for each of its fields.
func each(v string) func([]string) rueidis.RedisResult {
	return func(words []string) rueidis.RedisResult {
		vals := make([]rueidis.RedisMessage, len(words)-2)
		for i := range vals {
			vals[i] = mock.RedisString(v)
		}
		return mock.Result(mock.RedisArray(vals...))
	}
}

// strings_ is an array reply of bulk strings.
func bulks(vals ...string) rueidis.RedisMessage {
	msgs := make([]rueidis.RedisMessage, len(vals))
	for i, v := range vals {
		msgs[i] = mock.RedisString(v)
	}
	return mock.RedisArray(msgs...)
}

// hmgetReply is an HMGET reply of vals, "" for a missing field.
func hmgetReply(vals ...string) rueidis.RedisMessage {
	msgs := make([]rueidis.RedisMessage, len(vals))
	for i, v := range vals {
		msgs[i] = mock.RedisString(v)
		if v == "" {
			msgs[i] = mock.RedisNil()
		}
	}
	return mock.RedisArray(msgs...)
}

// pendingAt is one row of an extended XPENDING reply.
type pendingAt struct {
	id, consumer       string
	idleMS, deliveries int64
}

func pendingReply(rows ...pendingAt) rueidis.RedisMessage {
	msgs := make([]rueidis.RedisMessage, len(rows))
	for i, p := range rows {
		msgs[i] = mock.RedisArray(mock.RedisString(p.id), mock.RedisString(p.consumer), mock.RedisInt64(p.idleMS), mock.RedisInt64(p.deliveries))
	}
	return mock.RedisArray(msgs...)
}

// entryReply is an XRANGE reply of one entry with fields.
func entryReply(id string, fields ...string) rueidis.RedisMessage {
	return mock.RedisArray(mock.RedisArray(mock.RedisString(id), bulks(fields...)))
}

// withPrefix returns the commands of cmds that start with prefix.
func withPrefix(cmds []string, prefix string) []string {
	var out []string
	for _, c := range cmds {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// indexWithPrefix is the index of the first of cmds that starts with
// prefix; -1: none.
func indexWithPrefix(cmds []string, prefix string) int {
	return slices.IndexFunc(cmds, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

// eventOf decodes the one event a commit appends to the attempt log.
func eventOf(t *testing.T, commit []string) events.Event {
	t.Helper()
	adds := withPrefix(commit, "XADD "+replayKeys.Attempts+" * json ")
	require.Len(t, adds, 1, "one event appended: %q", commit)
	ev, err := events.Decode([]byte(strings.TrimPrefix(adds[0], "XADD "+replayKeys.Attempts+" * json ")))
	require.NoError(t, err)
	return ev
}

// workerWrite is the record a commit writes for worker.
func workerWrite(t *testing.T, commit []string, worker string) string {
	t.Helper()
	sets := withPrefix(commit, "HSET "+replayKeys.Workers+" "+worker+" ")
	require.Len(t, sets, 1, "one record written: %q", commit)
	return strings.TrimPrefix(sets[0], "HSET "+replayKeys.Workers+" "+worker+" ")
}
