package queue

import (
	"testing"
	"time"
)

func aheadOp(mode, worker, entry string) *fencedOp {
	op := opOf(mode, Reservation{WorkerID: worker, Stream: StreamUnits, EntryID: entry}, false)
	return &op
}

func aheadWorkers(t *aheadTrip) []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, rd := range t.reads {
		out = append(out, rd.worker)
	}
	return out
}

// The settlement of the last unit a ReserveBatch with ReadAhead gave
// carries the reads, once; heartbeats, the settlements before it, and
// those of a worker that did not ask carry none.
func TestReadAheadCarriedByTheLastSettlement(t *testing.T) {
	var k readAheads
	opts := ReserveOptions{Timeout: time.Second, MaxReclaims: 3, Block: time.Second}
	rs := []Reservation{{WorkerID: "w1", Stream: StreamUnits, EntryID: "1-0"}, {WorkerID: "w1", Stream: StreamUnits, EntryID: "2-0"}}
	k.given("w1", 2, opts, true, rs, nil, false)
	k.given("w2", 1, opts, false, []Reservation{{WorkerID: "w2", Stream: StreamUnits, EntryID: "3-0"}}, nil, false)
	steps := []struct {
		batch []*fencedOp
		want  []string
	}{
		{[]*fencedOp{aheadOp(ModeHeartbeat, "w1", "1-0"), aheadOp(ModeFinalize, "w2", "3-0")}, nil},
		{[]*fencedOp{aheadOp(ModeFinalize, "w1", "1-0")}, nil},
		{[]*fencedOp{aheadOp(ModeRequeue, "w1", "2-0")}, []string{"w1"}},
		{[]*fencedOp{aheadOp(ModeRequeue, "w1", "2-0")}, nil}, // settled again: carried already
	}
	for i, s := range steps {
		got := aheadWorkers(k.carry(nil, s.batch))
		if len(got) != len(s.want) || len(got) > 0 && got[0] != s.want[0] {
			t.Errorf("step %d: carried for %v, want %v", i+1, got, s.want)
		}
	}
	if len(k.byWorker) != 0 {
		t.Errorf("state left after every settlement: %v", k.byWorker)
	}
}

// A worker that stops reading ahead before its last settlement gets no
// reads carried.
func TestReadAheadStopped(t *testing.T) {
	b := &Build{core: &core{}}
	b.core.ahead.given("w1", 1, ReserveOptions{}, true, []Reservation{{WorkerID: "w1", Stream: StreamUnits, EntryID: "1-0"}}, nil, false)
	b.StopReadAhead("w1")
	if got := b.core.ahead.carry(b.core, []*fencedOp{aheadOp(ModeFinalize, "w1", "1-0")}); got != nil {
		t.Errorf("carried for %v after StopReadAhead", aheadWorkers(got))
	}
}

// The next call takes the stash, and a first look only while fresh and
// made on its terms.
func TestReadAheadTakesAFreshLookOnItsTerms(t *testing.T) {
	var k readAheads
	opts := ReserveOptions{Timeout: time.Second, MaxReclaims: 3, Block: time.Second}
	k.keep("w1", &firstLook{}, opts, time.Now(), []stashed{{s: StreamUnits}}, aheadPrio{})
	other := opts
	other.Timeout = 2 * time.Second
	if got := k.take("w1", other); got.look != nil || len(got.stash) != 1 {
		t.Errorf("on another timeout: look %v, stash %d; want none, 1", got.look, len(got.stash))
	}
	k.keep("w1", &firstLook{}, opts, time.Now().Add(-2*aheadMaxAge), nil, aheadPrio{})
	if got := k.take("w1", opts); got.look != nil {
		t.Errorf("a look %v old was taken", 2*aheadMaxAge)
	}
	k.keep("w1", &firstLook{}, opts, time.Now(), nil, aheadPrio{})
	if got := k.take("w1", opts); got.look == nil {
		t.Error("a fresh look on the call's terms was not taken")
	}
	if len(k.byWorker) != 0 {
		t.Errorf("state left once taken: %v", k.byWorker)
	}
}

// The units stream is read ahead only while the priority stream is known
// empty: found so by a read whose look saw its last-generated-id, which
// has not moved since.
func TestReadAheadPriorityKnownEmpty(t *testing.T) {
	for _, c := range []struct {
		name string
		p    aheadPrio
		was  string
		want string
	}{
		{"read, empty", aheadPrio{gen: "5-0", read: true, empty: true}, "", "5-0"},
		{"read, entries", aheadPrio{gen: "5-0", read: true}, "5-0", ""},
		{"units read, id still", aheadPrio{gen: "5-0"}, "5-0", "5-0"},
		{"units read, id moved", aheadPrio{gen: "6-0"}, "5-0", ""},
		{"no look", aheadPrio{read: true, empty: true}, "5-0", ""},
	} {
		if got := c.p.emptyAt(c.was); got != c.want {
			t.Errorf("%s: known empty at %q, want %q", c.name, got, c.want)
		}
	}
}
