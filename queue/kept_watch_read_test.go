package queue

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"
)

// oneEntry is an XREADGROUP reply delivering entry id of stream, unit u.
func oneEntry(stream, id, u string) rueidis.RedisResult {
	return mock.Result(mock.RedisArray(mock.RedisArray(mock.RedisBlobString(stream),
		mock.RedisArray(mock.RedisArray(mock.RedisBlobString(id),
			mock.RedisArray(mock.RedisBlobString("unit_id"), mock.RedisBlobString(u)))))))
}

// An idle worker's watched units read whose other replies failed still
// gives the entries it delivered: they are pending under the worker, and a
// second read would never see them again, leaving them to a reclaim that
// spends one of their unit's reclaims. The mock client fails the test on
// any second read.
func TestWatchedReadKeepsWhatItDelivered(t *testing.T) {
	ctrl := gomock.NewController(t)
	client := mock.NewClient(ctrl)
	conn := mock.NewDedicatedClient(ctrl)
	b, err := Open(client, "watched-read", Options{Engine: EngineDefault})
	if err != nil {
		t.Fatal(err)
	}
	b.eng.watches.gave("w1", false) // its last reservation gave nothing
	units := b.schema.keys.Units
	client.EXPECT().Dedicate().Return(conn, func() {})
	conn.EXPECT().DoMulti(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
		if len(cmds) != 5 {
			t.Fatalf("watched read sent %d commands, want WATCH, meta, record, XREADGROUP, TIME", len(cmds))
		}
		return []rueidis.RedisResult{
			mock.Result(mock.RedisString("OK")),
			mock.Result(mock.RedisInt64(1)),
			mock.Result(mock.RedisError("WRONGTYPE Operation against a key holding the wrong kind of value")),
			oneEntry(units, "7-0", "spec/a_spec.rb"),
			timeReply(1_000_000),
		}
	})
	unwatched := make(chan struct{})
	conn.EXPECT().Do(gomock.Any(), mock.Match("UNWATCH")).DoAndReturn(func(context.Context, rueidis.Completed) rueidis.RedisResult {
		close(unwatched)
		return mock.Result(mock.RedisString("OK"))
	})

	got, err := b.eng.readStream(context.Background(), "w1", StreamUnits, 1, time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got[units]) != 1 || got[units][0].ID != "7-0" {
		t.Errorf("read gave %v, want entry 7-0 of %s", got, units)
	}
	select {
	case <-unwatched: // a connection with a failed reply is given back disarmed, not kept
	case <-time.After(5 * time.Second):
		t.Error("the connection was not given back disarmed")
	}
	if b.eng.watches.take("w1", ModeLiveness) != nil {
		t.Error("a watched read with a failed reply was kept for Liveness")
	}
}
