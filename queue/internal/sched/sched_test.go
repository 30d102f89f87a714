package sched

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type op struct {
	name string
	c    Claims
}

func (o *op) Claims() Claims { return o.c }

// ops are named by letter; each is "worker unit entry" and "tail" when it
// may requeue: "a": "w1 u1 e1".
type ops map[string]string

func (m ops) build() map[string]*op {
	out := map[string]*op{}
	for name, spec := range m {
		f := strings.Fields(spec)
		out[name] = &op{name: name, c: Claims{Worker: f[0], Unit: f[1], Stream: "s", Entry: f[2], Tail: len(f) > 3 && f[3] == "tail"}}
	}
	return out
}

// A step is "start a", "alone a" (StartAlone), "finish a" (the batch a
// leads), "follow" or "withdraw a"; its outcome the batches opened, each its ops by name,
// batches apart by "|", "-" for none (or true or false for withdraw).
type step struct{ do, want string }

func names(batches ...[]*op) string {
	var out []string
	for _, b := range batches {
		if b == nil {
			continue
		}
		var n []string
		for _, o := range b {
			n = append(n, o.name)
		}
		out = append(out, strings.Join(n, " "))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, "|")
}

func run(t *testing.T, l Limits, m ops, steps []step) {
	t.Helper()
	s := New[*op](l)
	byName := m.build()
	led := map[string][]*op{} // batches in flight, by their leader
	opened := func(bs ...[]*op) string {
		for _, b := range bs {
			if b != nil {
				led[b[0].name] = b
			}
		}
		return names(bs...)
	}
	for i, st := range steps {
		verb, arg, _ := strings.Cut(st.do, " ")
		var got string
		switch verb {
		case "start":
			require.Contains(t, byName, arg)
			got = opened(s.Start(byName[arg], nil))
		case "finish":
			require.Contains(t, led, arg, "step %d: no batch led by %s in flight", i, arg)
			b := led[arg]
			delete(led, arg)
			got = opened(s.Finish(b)...)
		case "alone":
			require.Contains(t, byName, arg)
			got = opened(s.StartAlone(byName[arg]))
		case "follow":
			got = opened(s.Follow())
		case "withdraw":
			got = fmt.Sprint(s.Withdraw(byName[arg]))
		default:
			t.Fatalf("step %d: %q", i, st.do)
		}
		assert.Equal(t, st.want, got, "step %d: %s", i, st.do)
	}
}

// batchOrder are scenarios of the batch order, under two lanes of 32
// unless they say otherwise.
var batchOrder = []struct {
	name   string
	limits Limits
	ops    ops
	steps  []step
}{{
	name: "alone while a lane is free, then waiting ones share one batch in arrival order",
	ops:  ops{"a": "w1 u1 e1", "b": "w2 u2 e2", "c": "w3 u3 e3", "d": "w4 u4 e4", "e": "w5 u5 e5"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"start d", "-"}, {"start e", "-"},
		{"finish b", "c d e"}, {"finish a", "-"}, {"finish c", "-"},
	},
}, {
	name: "alone: past the lanes, sharing nothing, leaving the waiting ones waiting",
	ops:  ops{"a": "w1 u1 e1", "b": "w2 u2 e2", "c": "w3 u3 e3", "k": "w4 u4 e4"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"alone k", "k"},
		{"finish k", "-"}, {"finish a", "c"}, {"finish b", "-"},
	},
}, {
	name:   "alone: a lane it took beyond the limit opens nothing when given back",
	limits: Limits{MaxBatch: 32, MaxLanes: 1},
	ops:    ops{"a": "w1 u1 e1", "k": "w4 u4 e4", "c": "w3 u3 e3"},
	steps:  []step{{"alone k", "k"}, {"start a", "-"}, {"start c", "-"}, {"finish k", "a c"}},
}, {
	name: "alone: not while one of its own is in flight or waiting",
	ops:  ops{"a": "w1 u1 e1", "b": "w2 u2 e2", "c": "w3 u3 e3", "k": "w3 u4 e4", "m": "w5 u1 e5"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"alone k", "-"}, {"alone m", "-"},
		{"finish a", "c"}, {"alone m", "m"},
	},
}, {
	name:   "maxBatch: the rest waits for the next",
	limits: Limits{MaxBatch: 2, MaxLanes: 1},
	ops:    ops{"a": "w1 u1 e1", "b": "w2 u2 e2", "c": "w3 u3 e3", "d": "w4 u4 e4"},
	steps:  []step{{"start a", "a"}, {"start b", "-"}, {"start c", "-"}, {"start d", "-"}, {"finish a", "b c"}, {"finish b", "d"}},
}, {
	name:   "a lane given back opens one batch",
	limits: Limits{MaxBatch: 1, MaxLanes: 2},
	ops:    ops{"a": "w1 u1 e1", "b": "w2 u2 e2", "c": "w3 u3 e3", "d": "w4 u4 e4", "e": "w5 u5 e5"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"start d", "-"}, {"start e", "-"},
		{"finish a", "c"}, {"finish b", "d"}, {"finish c", "e"},
	},
}, {
	name: "no two ops of one worker in one batch",
	ops:  ops{"a": "w0 u0 e0", "b": "w9 u9 e9", "c": "w1 u1 e1", "d": "w1 u2 e2", "e": "w3 u3 e3"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"start d", "-"}, {"start e", "-"},
		{"finish a", "c e"}, {"finish b", "-"}, {"finish c", "d"},
	},
}, {
	name: "no two ops of one unit in one batch",
	ops:  ops{"a": "w0 u0 e0", "b": "w9 u9 e9", "c": "w1 u1 e1", "d": "w2 u1 e2"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"start d", "-"},
		{"finish a", "c"}, {"finish b", "-"}, {"finish c", "d"},
	},
}, {
	name: "no two ops of one entry in one batch",
	ops:  ops{"a": "w0 u0 e0", "b": "w9 u9 e9", "c": "w1 u1 e1", "d": "w2 u2 e1"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"start d", "-"},
		{"finish a", "c"}, {"finish b", "-"}, {"finish c", "d"},
	},
}, {
	name: "not while one of its own is in flight, even with a lane free",
	ops:  ops{"a": "w1 u1 e1", "b": "w1 u2 e2", "c": "w3 u1 e3", "d": "w4 u4 e1"},
	steps: []step{
		{"start a", "a"}, {"start b", "-"}, {"start c", "-"}, {"start d", "-"},
		{"finish a", "b c d"},
	},
}, {
	name: "behind a waiting op of its own: the worker's order holds",
	ops:  ops{"a": "w1 u1 e1", "b": "w2 u1 e2", "c": "w2 u3 e3", "d": "w4 u4 e4"},
	steps: []step{
		// b waits for a's unit; c, of b's worker, waits behind b with a
		// lane free; d, of nothing waiting, goes at once.
		{"start a", "a"}, {"start b", "-"}, {"start c", "-"}, {"start d", "d"},
		{"finish a", "b"}, {"finish b", "c"},
	},
}, {
	name: "behind a waiting op of its own, when a batch opens",
	ops:  ops{"x": "w8 u8 e8", "y": "w9 u9 e9", "a": "w1 u1 e1", "b": "w2 u1 e2", "c": "w2 u3 e3", "d": "w4 u4 e4"},
	steps: []step{
		{"start x", "x"}, {"start a", "a"}, {"start b", "-"}, {"start c", "-"}, {"start d", "-"},
		// x's lane: b may not lead (a's unit in flight), c is behind
		// b, d leads.
		{"finish x", "d"}, {"finish a", "b"}, {"finish b", "c"},
	},
}, {
	name: "one batch in flight with requeues",
	ops:  ops{"a": "w1 u1 e1 tail", "b": "w2 u2 e2 tail", "c": "w3 u3 e3", "d": "w4 u4 e4 tail"},
	steps: []step{
		{"start a", "a"}, {"start b", "-"}, {"start c", "c"}, {"start d", "-"},
		{"finish c", "-"}, {"finish a", "b d"},
	},
}, {
	name: "a batch led by a requeue takes the requeues waiting",
	ops:  ops{"a": "w1 u1 e1", "b": "w2 u2 e2", "c": "w3 u3 e3 tail", "d": "w4 u4 e4", "e": "w5 u5 e5 tail"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"start d", "-"}, {"start e", "-"},
		{"finish a", "c d e"},
	},
}, {
	name: "a requeue waits for the tail, not the batch it would join",
	ops:  ops{"t": "w9 u9 e9 tail", "a": "w1 u1 e1", "b": "w2 u2 e2", "c": "w3 u3 e3", "d": "w4 u4 e4 tail", "e": "w5 u5 e5"},
	steps: []step{
		{"start t", "t"}, {"start a", "a"}, {"start b", "-"}, {"start d", "-"}, {"start e", "-"},
		{"finish a", "b e"}, {"finish t", "d"},
	},
}, {
	name: "follow: one lane over, no more",
	ops:  ops{"a": "w1 u1 e1", "b": "w2 u2 e2", "c": "w3 u3 e3", "d": "w4 u4 e4"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"follow", "c"},
		{"start d", "-"}, {"follow", "-"}, {"finish a", "-"}, {"follow", "d"},
	},
}, {
	name:  "follow: none waiting, or none that may lead",
	ops:   ops{"a": "w1 u1 e1", "b": "w1 u2 e2"},
	steps: []step{{"follow", "-"}, {"start a", "a"}, {"start b", "-"}, {"follow", "-"}, {"finish a", "b"}},
}, {
	name: "withdraw: only while waiting; those behind it move up",
	ops:  ops{"a": "w1 u1 e1", "b": "w9 u9 e9", "c": "w1 u2 e2", "d": "w3 u2 e3"},
	steps: []step{
		{"start a", "a"}, {"start b", "b"}, {"start c", "-"}, {"start d", "-"},
		{"withdraw c", "true"}, {"finish b", "d"}, {"withdraw d", "false"},
	},
}}

func TestBatchOrder(t *testing.T) {
	for _, tc := range batchOrder {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.limits
			if l == (Limits{}) {
				l = Limits{MaxBatch: 32, MaxLanes: 2}
			}
			run(t, l, tc.ops, tc.steps)
		})
	}
}

func TestStartReadiesOnlyTheOpsThatWait(t *testing.T) {
	s := New[*op](Limits{MaxBatch: 32, MaxLanes: 1})
	m := ops{"a": "w1 u1 e1", "b": "w2 u2 e2"}.build()
	var readied []string
	queued := func(o *op) {
		assert.NotContains(t, s.pending, o, "readied before it can be taken")
		readied = append(readied, o.name)
	}
	require.NotNil(t, s.Start(m["a"], queued))
	require.Nil(t, s.Start(m["b"], queued))
	assert.Equal(t, []string{"b"}, readied)
}
