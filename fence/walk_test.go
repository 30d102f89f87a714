package fence_test

import (
	"slices"
	"testing"

	"github.com/hopper-queue/hopper/fence"
)

// pending builds a window from a compact spec, one letter per entry:
// b busy (not idle), i idle; then, for an entry that may be deleted, d
// (read, deleted), p (read, present) or ? (not read). A letter alone
// cannot be deleted, and reads as present.
func pending(spec ...string) []fence.Pending {
	w := make([]fence.Pending, len(spec))
	for i, s := range spec {
		p := fence.Pending{Row: fence.Row{EntryID: string(rune('a' + i)), IdleMS: 10}}
		if s[0] == 'i' {
			p.IdleMS = 100
		}
		if len(s) > 1 {
			p.MayBeDeleted = true
			p.Read = s[1] != '?'
			p.Present = s[1] == 'p'
		} else {
			p.Read, p.Present = true, true
		}
		w[i] = p
	}
	return w
}

func TestWalk(t *testing.T) {
	cases := []struct {
		name   string
		window []fence.Pending
		end    fence.WalkEnd
		ok     bool
	}{
		{"empty window", nil, fence.WalkEnd{At: -1}, true},
		{"all busy", pending("b", "b", "b"), fence.WalkEnd{At: -1}, true},
		{"first idle is claimed", pending("b", "i", "i"), fence.WalkEnd{At: 1}, true},
		{"deleted before idle is dropped", pending("b", "bd", "i"), fence.WalkEnd{At: 1, Drop: true}, true},
		{"deleted idle is dropped, not claimed", pending("id", "i"), fence.WalkEnd{At: 0, Drop: true}, true},
		{"present maybe-deleted is passed over", pending("bp", "bp", "i"), fence.WalkEnd{At: 2}, true},
		{"idle present maybe-deleted is claimed", pending("bp", "ip"), fence.WalkEnd{At: 1}, true},
		{"deleted after idle is not reached", pending("i", "bd"), fence.WalkEnd{At: 0}, true},
		{"unread maybe-deleted stops the walk", pending("b", "b?", "i"), fence.WalkEnd{At: -1}, false},
		{"unread idle stops the walk", pending("i?"), fence.WalkEnd{At: -1}, false},
		{"unread after the end is not needed", pending("i", "b?"), fence.WalkEnd{At: 0}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			end, ok := fence.Walk(c.window, 50)
			if end != c.end || ok != c.ok {
				t.Fatalf("Walk = %+v, %v; want %+v, %v", end, ok, c.end, c.ok)
			}
		})
	}
}

func TestWalkZeroTimeoutClaimsTheFirst(t *testing.T) {
	end, ok := fence.Walk(pending("b", "i"), 0)
	if want := (fence.WalkEnd{At: 0}); end != want || !ok {
		t.Fatalf("Walk = %+v, %v; want %+v, true", end, ok, want)
	}
}

func TestToRead(t *testing.T) {
	cases := []struct {
		name   string
		window []fence.Pending
		want   []int
	}{
		{"empty window", nil, nil},
		{"all busy, none deleted", pending("b", "b"), nil},
		{"maybe-deleted ones, then the first idle", pending("b", "b?", "b", "i", "b?"), []int{1, 3}},
		{"first idle ends it", pending("i", "b?", "i"), []int{0}},
		{"maybe-deleted without an idle one", pending("b?", "b?"), []int{0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fence.ToRead(c.window, 50); !slices.Equal(got, c.want) {
				t.Fatalf("ToRead = %v, want %v", got, c.want)
			}
		})
	}
}

// TestWalkReadsWhatToReadNames: once every entry ToRead names is read, the
// walk never needs another.
func TestWalkReadsWhatToReadNames(t *testing.T) {
	for _, spec := range [][]string{
		{"b", "b?", "i?", "b?"},
		{"b?", "b?", "b?"},
		{"b", "i?", "i?"},
		{"i"},
	} {
		w := pending(spec...)
		for _, i := range fence.ToRead(w, 50) {
			w[i].Read, w[i].Present = true, true
		}
		if _, ok := fence.Walk(w, 50); !ok {
			t.Errorf("%v: Walk needs an entry ToRead did not name", spec)
		}
	}
}
