package fence_test

import (
	"fmt"
	"testing"

	"github.com/hopper-queue/hopper/fence"
)

func TestHolds(t *testing.T) {
	row := fence.Row{EntryID: "1-0", Consumer: "w1", IdleMS: 5, DeliveryCount: 2}
	cases := []struct {
		name  string
		found bool
		want  fence.Expect
		holds bool
	}{
		{"owner and count match", true, fence.Expect{EntryID: "1-0", Owner: "w1", DeliveryCount: 2}, true},
		{"owner only", true, fence.Expect{EntryID: "1-0", Owner: "w1"}, true},
		{"entry not pending", false, fence.Expect{EntryID: "1-0", Owner: "w1", DeliveryCount: 2}, false},
		{"other owner", true, fence.Expect{EntryID: "1-0", Owner: "w2", DeliveryCount: 2}, false},
		{"other delivery count", true, fence.Expect{EntryID: "1-0", Owner: "w1", DeliveryCount: 1}, false},
		{"other owner, any count", true, fence.Expect{EntryID: "1-0", Owner: "w2"}, false},
		// Redis reports the row of 1-0 for XPENDING 01-0 01-0: the id the
		// caller holds, spelt otherwise, names another guard.
		{"id with a leading zero", true, fence.Expect{EntryID: "01-0", Owner: "w1", DeliveryCount: 2}, false},
		{"sequence with a leading zero", true, fence.Expect{EntryID: "1-00", Owner: "w1", DeliveryCount: 2}, false},
		{"id with a sign", true, fence.Expect{EntryID: "+1-0", Owner: "w1"}, false},
		{"another entry", true, fence.Expect{EntryID: "2-0", Owner: "w1", DeliveryCount: 2}, false},
		{"no id", true, fence.Expect{Owner: "w1", DeliveryCount: 2}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fence.Holds(row, c.found, c.want); got != c.holds {
				t.Fatalf("got %v, want %v", got, c.holds)
			}
		})
	}
}

func TestIdle(t *testing.T) {
	cases := []struct {
		idle, timeout int64
		want          bool
	}{
		{150, 100, true},
		{100, 100, true}, // exactly the timeout is idle, as XAUTOCLAIM counts it
		{99, 100, false},
		{0, 0, true}, // a zero timeout makes every pending entry eligible
	}
	for _, c := range cases {
		if got := fence.Idle(fence.Row{IdleMS: c.idle}, c.timeout); got != c.want {
			t.Errorf("Idle(%d, %d): got %v, want %v", c.idle, c.timeout, got, c.want)
		}
	}
}

func TestSlot(t *testing.T) {
	// Reference values from the Redis Cluster specification's CRC16 test
	// vector and CLUSTER KEYSLOT.
	cases := map[string]int{
		"123456789":         12739,
		"foo":               12182,
		"{user1000}.a":      fence.Slot("user1000"),
		"a{}b":              fence.Slot("a{}b"),
		"hopper:{b1}:units": fence.Slot("b1"),
	}
	for key, want := range cases {
		if got := fence.Slot(key); got != want {
			t.Errorf("Slot(%q): got %d, want %d", key, got, want)
		}
	}
}

func TestSlotPrefixKeepsTheSlot(t *testing.T) {
	keys := []string{
		"hopper:{b1}:units",
		"hopper:{build-{7}}:units",
		"plain-units",
		"units",
		"no}tag{here",
		"a{}b:units",
		"{units",
		"x{u}units",
	}
	for _, key := range keys {
		prefix := fence.SlotPrefix(key)
		for _, derived := range []string{
			fence.EntryKey(prefix, "units:priority", "1700000000000-3"),
			fence.WorkerKey(prefix, "ci-{evil}-7"),
			fence.TailKey(prefix),
		} {
			if got, want := fence.Slot(derived), fence.Slot(key); got != want {
				t.Errorf("key %q: derived %q in slot %d, want %d", key, derived, got, want)
			}
		}
	}
	if got, want := fence.SlotPrefix("hopper:{b1}:units"), "hopper:{b1}:"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestTagForSlotCoversEverySlot(t *testing.T) {
	for s := 0; s < fence.SlotCount; s++ {
		tag := fence.TagForSlot(s)
		if got := fence.Slot(tag); got != s {
			t.Fatalf("tag %q for slot %d hashes to %d", tag, s, got)
		}
	}
}

// A slot outside 0..SlotCount-1 has no tag: TagForSlot must say so, naming
// it, rather than fail with an index out of range (a negative slot) or hand
// back another slot's tag (SlotCount and above).
func TestTagForSlotRefusesOutOfRange(t *testing.T) {
	for _, slot := range []int{-1, fence.SlotCount, fence.SlotCount + 5} {
		func() {
			defer func() {
				got, _ := recover().(string)
				want := fmt.Sprintf("fence: slot %d is out of range [0, %d)", slot, fence.SlotCount)
				if got != want {
					t.Errorf("TagForSlot(%d) panicked with %q, want %q", slot, got, want)
				}
			}()
			tag := fence.TagForSlot(slot)
			t.Errorf("TagForSlot(%d): got %q, want a panic", slot, tag)
		}()
	}
}

func FuzzSlotPrefix(f *testing.F) {
	for _, seed := range []string{"hopper:{b}:units", "units", "{", "}{", "{a}", "a{b}c{d}units"} {
		f.Add(seed, "w{1}")
	}
	f.Fuzz(func(t *testing.T, key, worker string) {
		prefix := fence.SlotPrefix(key)
		if got, want := fence.Slot(fence.WorkerKey(prefix, worker)), fence.Slot(key); got != want {
			t.Fatalf("key %q worker %q: slot %d, want %d", key, worker, got, want)
		}
	})
}
