package txn

import (
	"errors"
	"io"
	"testing"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
)

func TestExecOutcome(t *testing.T) {
	queued := mock.Result(mock.RedisString("QUEUED"))
	redisErr := func(s string) rueidis.RedisResult { return mock.Result(mock.RedisError(s)) }
	execOf := func(replies ...rueidis.RedisMessage) rueidis.RedisResult {
		return mock.Result(mock.RedisArray(replies...))
	}
	cases := []struct {
		name      string
		res       []rueidis.RedisResult
		ambiguous bool
		is        error  // errors.Is
		says      string // in its message
	}{
		{name: "applied", res: []rueidis.RedisResult{ok(), queued, execOf(mock.RedisString("OK"))}},
		{name: "aborted by a watched key", res: []rueidis.RedisResult{ok(), queued, mock.Result(mock.RedisNil())}, is: ErrAborted},
		{name: "the connection lost on the way", res: []rueidis.RedisResult{ok(), mock.ErrorResult(io.EOF), mock.ErrorResult(io.EOF)}, ambiguous: true, is: io.EOF},
		{name: "redirected while queueing", res: []rueidis.RedisResult{ok(), redisErr("MOVED 1 10.0.0.2:7001"), redisErr("EXECABORT Transaction discarded")}, says: "MOVED"},
		{name: "refused", res: []rueidis.RedisResult{ok(), queued, redisErr("EXECABORT Transaction discarded")}, says: "commit refused: EXECABORT"},
		{name: "a command failed inside", res: []rueidis.RedisResult{ok(), queued, queued, execOf(mock.RedisString("OK"), mock.RedisError("WRONGTYPE no"))}, says: "command 2 of the commit failed, the rest was applied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ambiguous, err := ExecOutcome(tc.res, "commit")
			assert.Equal(t, tc.ambiguous, ambiguous)
			switch {
			case tc.is != nil:
				assert.ErrorIs(t, err, tc.is)
			case tc.says != "":
				assert.ErrorContains(t, err, tc.says)
				assert.False(t, errors.Is(err, ErrAborted))
			default:
				assert.NoError(t, err)
			}
		})
	}
	moved := redisErr("MOVED 1 10.0.0.2:7001").Error()
	assert.True(t, IsRedirect(moved))
	addr, ok := MovedTo(moved)
	assert.True(t, ok)
	assert.Equal(t, "10.0.0.2:7001", addr)
	for _, s := range []string{"ASK 1 10.0.0.3:7001", "TRYAGAIN later", "CLUSTERDOWN down"} {
		assert.True(t, IsRedirect(redisErr(s).Error()), s)
	}
	assert.False(t, IsRedirect(redisErr("ERR no").Error()))
	assert.False(t, IsRedirect(io.EOF))
	_, ok = MovedTo(io.EOF)
	assert.False(t, ok)
}
