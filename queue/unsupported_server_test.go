package queue

import (
	"context"
	"io"
	"testing"

	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
)

// A server or proxy that cannot run WATCH, MULTI and EXEC on one
// connection is told apart from a broken connection, and said so.
func TestUnsupportedServer(t *testing.T) {
	cases := []struct {
		name  string
		world func(r *replay)
		want  error
	}{
		{"WATCH refused", func(r *replay) {
			r.on("WATCH", mock.RedisError("ERR unknown command 'watch', with args beginning with:"))
		},
			ErrUnsupportedServer},
		{"hung up on WATCH after answering a read", func(r *replay) { r.onResult("WATCH", mock.ErrorResult(io.EOF)) },
			ErrUnsupportedServer},
		{"away altogether", func(r *replay) {
			r.onResult("WATCH", mock.ErrorResult(io.EOF))
			r.onResult("EXISTS", mock.ErrorResult(io.EOF))
		}, io.EOF},
		{"another refusal", func(r *replay) { r.on("WATCH", mock.RedisError("NOPERM no")) }, nil},
	}
	for _, c := range cases {
		r, b := heldUnitWith(t, quick)
		c.world(r)
		err := b.Heartbeat(context.Background(), w1u1)
		if c.want == nil {
			assert.Error(t, err, c.name)
			assert.NotErrorIs(t, err, ErrUnsupportedServer, c.name)
		} else {
			assert.ErrorIs(t, err, c.want, c.name)
		}
		assert.Empty(t, r.committed(), c.name)
	}
}

// What a caller may try again without anyone fixing anything.
func TestTransient(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{ErrStale, false},
		{ErrCorrupt, false},
		{ErrInvalidArgument, false},
		{context.Canceled, false},
		{io.EOF, true},
		{mock.Result(mock.RedisError("LOADING Redis is loading")).Error(), true},
		{mock.Result(mock.RedisError("CLUSTERDOWN the cluster is down")).Error(), true},
		{mock.Result(mock.RedisError("TRYAGAIN multiple keys")).Error(), true},
		{mock.Result(mock.RedisError("ERR wrong")).Error(), false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Transient(c.err), "%v", c.err)
	}
}
