package txn

import (
	"strconv"

	"github.com/redis/rueidis"
)

// The transitions of one batch write the same keys the same way: each sets
// its worker's field of the workers hash, each finalize acks its entry,
// counts itself in meta and retires its entry guard. Redis takes many
// fields, ids or keys in one command at about the cost of one, and what
// every command costs the server around its work (reading it, queueing it
// in MULTI, its reply) is most of what these cost. So a batch's writes
// are merged before they are sent:
//
//   - HSET of one hash: one HSET of all the fields;
//   - XACK of one stream and group: one XACK of all the ids;
//   - HINCRBY of one field: one HINCRBY of the sum;
//   - DEL: one DEL of all the keys.
//
// The merged command goes where the last of those it replaces stood, so
// that each DEL still follows the SET before it (a guard's retirement, package queue's dropGuard). Nothing
// else a batch writes reads what these write, and the transitions of a
// batch share no worker, unit or entry, so the state EXEC leaves is the one
// the commands one by one would have left. The replies are not read but
// for errors, which a merged command reports as its parts would have.

// mergeKind names what a write does to which key, for merging.
type mergeKind struct {
	name, key, sub string // sub: XACK's group, HINCRBY's field
}

// mergeKindOf tells whether cmd (its words) is one that merges, and the
// arguments it brings to the merged command.
func mergeKindOf(parts []string) (mergeKind, []string, bool) {
	switch {
	case len(parts) >= 4 && len(parts)%2 == 0 && parts[0] == "HSET":
		return mergeKind{name: "HSET", key: parts[1]}, parts[2:], true
	case len(parts) >= 4 && parts[0] == "XACK":
		return mergeKind{name: "XACK", key: parts[1], sub: parts[2]}, parts[3:], true
	case len(parts) == 4 && parts[0] == "HINCRBY":
		if _, err := strconv.ParseInt(parts[3], 10, 64); err == nil {
			return mergeKind{name: "HINCRBY", key: parts[1], sub: parts[2]}, parts[3:], true
		}
	case len(parts) >= 2 && parts[0] == "DEL":
		return mergeKind{name: "DEL"}, parts[1:], true
	}
	return mergeKind{}, nil, false
}

// MergeWrites returns writes with the commands of one kind merged, each at
// the place of the last of its kind, in writes' own array. It must run
// before writes are sent: it reads their words, and rueidis recycles a
// command once it is done.
func MergeWrites(b rueidis.Builder, writes rueidis.Commands) rueidis.Commands {
	type group struct {
		kind    mergeKind
		last, n int
		args    []string
		sum     int64
	}
	var room [8]group // a batch writes a few kinds: no map to allocate
	groups := room[:0]
	find := func(kind mergeKind) int {
		for i := range groups {
			if groups[i].kind == kind {
				return i
			}
		}
		return -1
	}
	merged := 0
	for i, cmd := range writes {
		kind, args, ok := mergeKindOf(cmd.Commands())
		if !ok {
			continue
		}
		j := find(kind)
		if j < 0 {
			groups = append(groups, group{kind: kind})
			j = len(groups) - 1
		} else {
			merged++
		}
		g := &groups[j]
		g.last, g.n = i, g.n+1
		if kind.name == "HINCRBY" {
			v, _ := strconv.ParseInt(args[0], 10, 64)
			g.sum += v
		} else {
			g.args = append(g.args, args...)
		}
	}
	if merged == 0 {
		return writes
	}
	out := writes[:0] // each command lands at or before its own place
	for i, cmd := range writes {
		kind, _, ok := mergeKindOf(cmd.Commands())
		if !ok {
			out = append(out, cmd)
			continue
		}
		g := &groups[find(kind)]
		switch {
		case g.n == 1:
			out = append(out, cmd)
		case i == g.last:
			out = append(out, mergedCommand(b, kind, g.args, g.sum))
		}
	}
	clear(writes[len(out):])
	return out
}

func mergedCommand(b rueidis.Builder, kind mergeKind, args []string, sum int64) rueidis.Completed {
	switch kind.name {
	case "HSET":
		return b.Arbitrary("HSET").Keys(kind.key).Args(args...).Build()
	case "XACK":
		return b.Arbitrary("XACK").Keys(kind.key).Args(append([]string{kind.sub}, args...)...).Build()
	case "HINCRBY":
		return b.Arbitrary("HINCRBY").Keys(kind.key).Args(kind.sub, strconv.FormatInt(sum, 10)).Build()
	}
	return b.Arbitrary("DEL").Keys(args...).Build()
}
