package queue

import (
	"fmt"
	"testing"

	"github.com/hopper-queue/hopper/fence"
	"github.com/stretchr/testify/assert"
)

func TestEntryUnits(t *testing.T) {
	at := func(s Stream, id string) entryAt { return entryAt{s, id} }
	scan := func(s Stream, cand string, window ...string) streamScan {
		sc := streamScan{stream: s, cand: fence.Row{EntryID: cand}, hasCnd: cand != ""}
		for _, id := range window {
			sc.window = append(sc.window, fence.Row{EntryID: id})
		}
		return sc
	}

	t.Run("what a first look saw is ranged once", func(t *testing.T) {
		var e entryUnits
		assert.Empty(t, e.toRange(), "nothing seen yet")
		e.learn(at(StreamUnits, "1-0"), "u1") // read by one of the build's workers
		e.saw([]streamScan{scan(StreamPriority, "5-0", "5-0"), scan(StreamUnits, "", "1-0", "2-0")})
		assert.Equal(t, []entryAt{at(StreamPriority, "5-0"), at(StreamUnits, "2-0")}, e.toRange(),
			"unknown entries of the windows, the candidate once though also in its window")
		e.learnFields(at(StreamPriority, "5-0"), entryFields{exists: true, hasID: true, id: "u5"})
		e.learnFields(at(StreamUnits, "2-0"), entryFields{}) // deleted: names no unit
		assert.Empty(t, e.toRange(), "ranged once, whatever it held")
		_, ok := e.unit(at(StreamUnits, "2-0"))
		assert.False(t, ok)
		u, ok := e.unit(at(StreamPriority, "5-0"))
		assert.True(t, ok)
		assert.Equal(t, "u5", u)
		_, ok = e.unit(at(StreamUnits, "5-0"))
		assert.False(t, ok, "entry ids are per stream")
	})

	t.Run("an entry's unit, once learnt, is not replaced", func(t *testing.T) {
		var e entryUnits
		e.learn(at(StreamUnits, "1-0"), "u1")
		e.learn(at(StreamUnits, "1-0"), "other")
		e.learnFields(at(StreamUnits, "1-0"), entryFields{})
		u, _ := e.unit(at(StreamUnits, "1-0"))
		assert.Equal(t, "u1", u)
		e.learnFields(at(StreamUnits, "2-0"), entryFields{})
		e.learn(at(StreamUnits, "2-0"), "u2") // read by a worker after all
		u, _ = e.unit(at(StreamUnits, "2-0"))
		assert.Equal(t, "u2", u)
	})

	t.Run("bounded: past the bound only the latest windows are kept", func(t *testing.T) {
		var e entryUnits
		e.learn(at(StreamUnits, "0-1"), "in window")
		e.saw([]streamScan{scan(StreamUnits, "", "0-1")})
		for i := range maxEntryUnits {
			e.learn(at(StreamUnits, fmt.Sprintf("%d-0", i+1)), "u")
		}
		assert.LessOrEqual(t, len(e.units), maxEntryUnits)
		u, ok := e.unit(at(StreamUnits, "0-1"))
		assert.True(t, ok)
		assert.Equal(t, "in window", u)
		_, ok = e.unit(at(StreamUnits, "1-0"))
		assert.False(t, ok, "forgotten when the bound was reached")
		_, ok = e.unit(at(StreamUnits, fmt.Sprintf("%d-0", maxEntryUnits)))
		assert.True(t, ok, "the newest is kept")
	})
}
