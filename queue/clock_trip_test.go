package queue

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"
)

// timeReply is a TIME reply of ms epoch milliseconds.
func timeReply(ms int64) rueidis.RedisResult {
	sec, usec := ms/1000, (ms%1000)*1000
	return mock.Result(mock.RedisArray(mock.RedisBlobString(strconv.FormatInt(sec, 10)), mock.RedisBlobString(strconv.FormatInt(usec, 10))))
}

// clockedBuild is a Build on a client with no server behind it, whose
// clock runs on *mono.
func clockedBuild(t *testing.T, mono *time.Duration) (*Build, *mock.Client) {
	t.Helper()
	client := mock.NewClient(gomock.NewController(t))
	b, err := Open(client, "clock-test", Options{Engine: EngineDefault})
	if err != nil {
		t.Fatal(err)
	}
	b.eng.clock = machinery.NewClock(func() time.Duration { return *mono })
	return b, client
}

// A kept round trip's TIME is as old as the moment its replies arrived,
// however long the kept reads wait before a transition stands on them:
// the time then told is the reply's plus the wait, not the reply's.
func TestKeptTimeIsAnchoredWhenItArrived(t *testing.T) {
	mono := time.Hour
	b, _ := clockedBuild(t, &mono)
	conn := mock.NewDedicatedClient(gomock.NewController(t))
	ahead := &keptAhead{e: b.eng, r: Reservation{WorkerID: "w1", UnitID: "u1", Stream: StreamUnits, EntryID: "1-0", DeliveryCount: 1},
		mode: ModeHeartbeat, chain: &chained{}}
	if cmds := ahead.Carry(conn); len(cmds) == 0 {
		t.Fatal("kept reads carried nothing")
	}
	if !ahead.mine.trip.time {
		t.Fatal("a clock with no anchor: the kept round trip must carry a TIME")
	}
	mono += 2 * time.Millisecond
	replies := make([]rueidis.RedisResult, 3)
	replies[0], replies[1], replies[2] = mock.Result(mock.RedisString("OK")), mock.Result(mock.RedisNil()), timeReply(1_000_000)
	ahead.Arrived(conn, func() {}, replies, nil)

	mono += 900 * time.Millisecond // the worker's heartbeat comes late in the keep window
	now, err := b.eng.tripNow(context.Background(), conn, ahead.mine.trip, replies, ahead.mine.arrivedAt())
	if err != nil {
		t.Fatal(err)
	}
	if now != 1_000_900 {
		t.Errorf("told %d for a TIME of 1000000 read 900 ms ago, want 1000900", now)
	}
}
