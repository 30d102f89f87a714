package queue

import (
	"context"
	"strconv"
	"testing"
	"time"

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
// clock runs on mono.
func clockedBuild(t *testing.T, mono *fakeMono) (*Build, *mock.Client) {
	t.Helper()
	client := mock.NewClient(gomock.NewController(t))
	b, err := Open(client, "clock-test", Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.clock = newServerClock(mono.now)
	return b, client
}

// A kept round trip's TIME is as old as the moment its replies arrived,
// however long the kept reads wait before a transition stands on them:
// the time then told is the reply's plus the wait, not the reply's.
func TestKeptTimeIsAnchoredWhenItArrived(t *testing.T) {
	mono := &fakeMono{d: time.Hour}
	b, _ := clockedBuild(t, mono)
	conn := mock.NewDedicatedClient(gomock.NewController(t))
	ahead := &keptAhead{b: b, r: Reservation{WorkerID: "w1", UnitID: "u1", Stream: StreamUnits, EntryID: "1-0", DeliveryCount: 1},
		mode: ModeHeartbeat, chain: &chained{}}
	if cmds := ahead.Carry(conn); len(cmds) == 0 {
		t.Fatal("kept reads carried nothing")
	}
	if !ahead.mine.trip.time {
		t.Fatal("a clock with no anchor: the kept round trip must carry a TIME")
	}
	mono.add(2 * time.Millisecond)
	replies := make([]rueidis.RedisResult, 3)
	replies[0], replies[1], replies[2] = mock.Result(mock.RedisString("OK")), mock.Result(mock.RedisNil()), timeReply(1_000_000)
	ahead.Arrived(conn, func() {}, replies, nil)

	mono.add(900 * time.Millisecond) // the worker's heartbeat comes late in the keep window
	now, err := b.tripNow(context.Background(), conn, ahead.mine.trip, replies, ahead.mine.times())
	if err != nil {
		t.Fatal(err)
	}
	if now != 1_000_900 {
		t.Errorf("told %d for a TIME of 1000000 read 900 ms ago, want 1000900", now)
	}
}

// A round trip that took longer than clockMaxTrip anchors nothing: when
// its reply left the server is too uncertain. The clock keeps telling
// time from the anchor it had.
func TestSlowTripAnchorsNothing(t *testing.T) {
	mono := &fakeMono{d: time.Hour}
	c := newServerClock(mono.now)
	c.anchor(5_000, mono.now())
	sent := mono.now()
	mono.add(clockMaxTrip + time.Millisecond) // the worker was stopped while the reply waited
	c.anchorTrip(5_010, trip{sent: sent, arrived: mono.now()})
	want := 5_000 + (clockMaxTrip + time.Millisecond).Milliseconds()
	if ms, ok := c.now(); !ok || ms != want {
		t.Errorf("told %d %v, want %d from the earlier anchor", ms, ok, want)
	}
	sent = mono.now()
	mono.add(time.Millisecond)
	c.anchorTrip(9_000, trip{sent: sent, arrived: mono.now()})
	if ms, ok := c.now(); !ok || ms != 9_000 {
		t.Errorf("a quick round trip's TIME: told %d %v, want 9000", ms, ok)
	}
}

// An anchor read before the one the clock holds never replaces it: an old
// reply is never taken for a fresh one.
func TestOlderReplyNeverReplacesAnchor(t *testing.T) {
	mono := &fakeMono{d: time.Hour}
	c := newServerClock(mono.now)
	early := mono.now()
	mono.add(500 * time.Millisecond)
	c.anchor(20_000, mono.now())
	c.anchor(19_600, early) // arrived before the anchor, used after it
	if ms, _ := c.now(); ms != 20_000 {
		t.Errorf("told %d, want 20000 from the newer anchor", ms)
	}
	mono.add(700 * time.Millisecond) // 1.2 s after the old reply arrived
	if ms, ok := c.now(); !ok || ms != 20_700 {
		t.Errorf("told %d %v, want 20700", ms, ok)
	}
}
