package queue

import (
	"context"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/timings"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const timingsKey = "hopper:timings:{s}"

func TestLoadTimings(t *testing.T) {
	known := timings.Table{"./api": 3 * time.Second}
	cases := []struct {
		name  string
		reply rueidis.RedisMessage
		want  timings.Table
		err   error
	}{
		{"none yet", mock.RedisNil(), timings.Table{}, nil},
		{"recorded", mock.RedisString(string(known.Encode())), known, nil},
		{"not a table", mock.RedisString("{"), nil, ErrCorrupt},
		{"not a string", mock.RedisError("WRONGTYPE not a string"), nil, ErrCorrupt},
	}
	for _, c := range cases {
		r := newReplay(t)
		r.on("GET "+timingsKey, c.reply)
		got, err := LoadTimings(context.Background(), r, "s")
		if c.err != nil {
			assert.ErrorIs(t, err, c.err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	_, err := LoadTimings(context.Background(), newReplay(t), "a{b}")
	assert.ErrorIs(t, err, ErrInvalidArgument, "a brace would move the key to another slot")
}

// Recording merges the recent timings into the recorded ones under WATCH
// of the key; a key that does not hold a table is replaced, and said so.
func TestRecordTimings(t *testing.T) {
	old := timings.Table{"./api": 3 * time.Second}
	recent := timings.Table{"./db": time.Second}
	cases := []struct {
		name     string
		reply    rueidis.RedisMessage
		replaced bool
		want     timings.Table
	}{
		{"merged", mock.RedisString(string(old.Encode())), false, timings.Merge(old, recent)},
		{"first", mock.RedisNil(), false, recent},
		{"garbage replaced", mock.RedisString("{"), true, recent},
		{"other type replaced", mock.RedisError("WRONGTYPE not a string"), true, recent},
	}
	for _, c := range cases {
		r := newReplay(t)
		r.on("GET "+timingsKey, c.reply)
		r.aborts = 1 // another recorder first: read again
		replaced, err := RecordTimings(context.Background(), r, "s", recent, time.Hour)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.replaced, replaced, c.name)
		want := "SET " + timingsKey + " " + string(c.want.Encode()) + " PX 3600000"
		assert.Equal(t, [][]string{{want}}, r.committed(), c.name)
		assert.Len(t, withPrefix(r.sentLines(), "WATCH "+timingsKey), 2, c.name)
	}
	r := newReplay(t)
	r.aborts = timingsAttempts
	_, err := RecordTimings(context.Background(), r, "s", recent, 0)
	assert.ErrorIs(t, err, ErrContention)
	_, err = RecordTimings(context.Background(), r, "s", recent, time.Microsecond)
	assert.ErrorIs(t, err, ErrInvalidArgument)
}
