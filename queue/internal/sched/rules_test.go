package sched

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Random arrivals, commits and follows over a few workers, units and
// entries: the rules hold after every step, and every op runs.
func TestRulesHoldUnderRandomLoad(t *testing.T) {
	l := Limits{MaxBatch: 3, MaxLanes: 2}
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		s := New[*op](l)
		var inFlight [][]*op
		ran := map[*op]bool{}
		order := map[string][]*op{} // by worker, in order of Start
		var all []*op
		check := func(opened ...[]*op) {
			for _, b := range opened {
				if b == nil {
					continue
				}
				require.LessOrEqual(t, len(b), l.MaxBatch, "seed %d", seed)
				inFlight = append(inFlight, b)
				for _, o := range b {
					require.False(t, ran[o], "seed %d: %s twice", seed, o.name)
					ran[o] = true
					w := order[o.c.Worker]
					require.Same(t, w[0], o, "seed %d: worker %s out of order", seed, o.c.Worker)
					order[o.c.Worker] = w[1:]
				}
			}
			seen, tails := map[key]bool{}, 0
			for _, b := range inFlight {
				tail := false
				for _, o := range b {
					for _, k := range o.c.keys() {
						require.False(t, seen[k], "seed %d: %v twice in flight", seed, k)
						seen[k] = true
					}
					tail = tail || o.c.Tail
				}
				if tail {
					tails++
				}
			}
			require.LessOrEqual(t, tails, 1, "seed %d: requeues in two batches", seed)
			require.LessOrEqual(t, len(inFlight), l.MaxLanes+1, "seed %d", seed)
		}
		for i := range 200 {
			switch n := rng.IntN(10); {
			case n < 5:
				o := &op{name: fmt.Sprint(i), c: Claims{Worker: fmt.Sprint("w", rng.IntN(4)), Unit: fmt.Sprint("u", rng.IntN(6)),
					Stream: "s", Entry: fmt.Sprint("e", rng.IntN(6)), Tail: rng.IntN(4) == 0}}
				all = append(all, o)
				order[o.c.Worker] = append(order[o.c.Worker], o)
				check(s.Start(o, nil))
			case n < 9 && len(inFlight) > 0:
				j := rng.IntN(len(inFlight))
				b := inFlight[j]
				inFlight = append(inFlight[:j], inFlight[j+1:]...)
				check(s.Finish(b)...)
			default:
				check(s.Follow())
			}
		}
		for len(inFlight) > 0 {
			b := inFlight[0]
			inFlight = inFlight[1:]
			check(s.Finish(b)...)
		}
		for _, o := range all {
			require.True(t, ran[o], "seed %d: %s never ran", seed, o.name)
		}
	}
}
