package engine

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"
)

// oneEntry is an XREADGROUP reply delivering entry id of stream.
func oneEntry(stream, id string) rueidis.RedisResult {
	return mock.Result(mock.RedisArray(mock.RedisArray(mock.RedisBlobString(stream),
		mock.RedisArray(mock.RedisArray(mock.RedisBlobString(id),
			mock.RedisArray(mock.RedisBlobString("unit_id"), mock.RedisBlobString("u")))))))
}

// An idle worker's watched read whose other replies failed still gives
// what it delivered: the entries are pending under the worker, and a
// second read would never see them again, leaving them to a reclaim that
// spends one of their unit's reclaims. The connection goes back disarmed,
// not kept.
func TestWatchedReadKeepsWhatItDelivered(t *testing.T) {
	ctrl := gomock.NewController(t)
	client := mock.NewClient(ctrl)
	conn := mock.NewDedicatedClient(ctrl)
	e := New[string, testTrip](&testDomain{}, Config{Client: client})
	e.Gave("w1", false)
	if !e.WasIdle("w1") {
		t.Fatal("a worker whose reservation gave nothing is idle")
	}
	client.EXPECT().Dedicate().Return(conn, func() {})
	conn.EXPECT().DoMulti(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
		if len(cmds) != 5 {
			t.Fatalf("watched read sent %d commands, want WATCH, two reads, XREADGROUP, TIME", len(cmds))
		}
		return []rueidis.RedisResult{ok(), mock.Result(mock.RedisInt64(1)),
			mock.Result(mock.RedisError("WRONGTYPE Operation against a key holding the wrong kind of value")),
			oneEntry("units", "7-0"), timeReply(1_000_000)}
	})
	unwatched := make(chan struct{})
	conn.EXPECT().Do(gomock.Any(), mock.Match("UNWATCH")).DoAndReturn(func(context.Context, rueidis.Completed) rueidis.RedisResult {
		close(unwatched)
		return ok()
	})
	reads := func(c Conn) rueidis.Commands {
		return rueidis.Commands{c.B().Exists().Key("meta").Build(), c.B().Hget().Key("workers").Field("w1").Build()}
	}
	read := client.B().Xreadgroup().Group("g", "w1").Count(1).Block(1000).Streams().Key("units").Id(">").Build()
	replies, got, delivered := e.ReadWatching(context.Background(), "w1", "liveness", reads, read)
	if !delivered || len(replies) != 2 {
		t.Fatalf("ok %v, %d replies of the reads; want ok and 2", delivered, len(replies))
	}
	if streams, err := got.AsXRead(); err != nil || len(streams["units"]) != 1 || streams["units"][0].ID != "7-0" {
		t.Errorf("read gave %v (%v), want entry 7-0", streams, err)
	}
	select {
	case <-unwatched:
	case <-time.After(5 * time.Second):
		t.Error("the connection was not given back disarmed")
	}
	if e.watches.take("w1", "liveness") != nil {
		t.Error("a watched read with a failed reply was kept")
	}
}

// A watched read that delivered nothing and whose every reply came back
// leaves the connection watching, for the worker's next transition only.
func TestWatchedReadKeptForTheNextTransition(t *testing.T) {
	ctrl := gomock.NewController(t)
	client := mock.NewClient(ctrl)
	conn := mock.NewDedicatedClient(ctrl)
	e := New[string, testTrip](&testDomain{}, Config{Client: client})
	client.EXPECT().Dedicate().Return(conn, func() {})
	conn.EXPECT().DoMulti(gomock.Any(), gomock.Any()).Return([]rueidis.RedisResult{ok(), mock.Result(mock.RedisInt64(1)),
		mock.Result(mock.RedisNil()), timeReply(1_000_000)})
	reads := func(c Conn) rueidis.Commands { return rueidis.Commands{c.B().Exists().Key("meta").Build()} }
	read := client.B().Xreadgroup().Group("g", "w1").Count(1).Block(1000).Streams().Key("units").Id(">").Build()
	if _, _, delivered := e.ReadWatching(context.Background(), "w1", "liveness", reads, read); !delivered {
		t.Fatal("a read that answered nothing is an answer")
	}
	if e.Clock.Due() {
		t.Error("the TIME behind the read did not anchor the clock")
	}
	h := e.watches.take("w1", "liveness")
	if h == nil || len(h.Replies) != 2 {
		t.Fatalf("kept %v, want the connection with the WATCH's and the read's replies", h)
	}
}
