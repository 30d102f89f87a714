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

// A round trip's TIME is as old as the moment its replies arrived,
// however long they wait before a transition stands on them (kept reads):
// the time then told is the reply's plus the wait, not the reply's. The
// engine stamps when the replies arrived (engine's
// TestKeptTripStampsItsArrival); this is what the decisions make of it.
func TestTripTimeIsAnchoredWhenItArrived(t *testing.T) {
	mono := time.Hour
	client := mock.NewClient(gomock.NewController(t))
	b, err := Open(client, "clock-test", Options{Engine: EngineDefault})
	if err != nil {
		t.Fatal(err)
	}
	b.core.eng.Clock = machinery.NewClock(func() time.Duration { return mono })
	r := Reservation{WorkerID: "w1", UnitID: "u1", Stream: StreamUnits, EntryID: "1-0", DeliveryCount: 1}
	op := opOf(ModeHeartbeat, r, false)
	trip := b.core.Trip([]*fencedOp{&op})
	if !trip.time {
		t.Fatal("a clock with no anchor: the round trip must carry a TIME")
	}
	arrived := mono
	replies := []rueidis.RedisResult{mock.Result(mock.RedisString("OK")), mock.Result(mock.RedisNil()), timeReply(1_000_000)}
	mono += 900 * time.Millisecond // the worker's heartbeat comes late in the keep window
	conn := mock.NewDedicatedClient(gomock.NewController(t))
	now, err := b.core.tripNow(context.Background(), conn, trip, replies, arrived)
	if err != nil {
		t.Fatal(err)
	}
	if now != 1_000_900 {
		t.Errorf("told %d for a TIME of 1000000 read 900 ms ago, want 1000900", now)
	}
}
