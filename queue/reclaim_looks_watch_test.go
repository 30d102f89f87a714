//go:build !hopper_unfenced

package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/fence"
)

func rows(ids ...string) []fence.Row {
	out := make([]fence.Row, len(ids))
	for i, id := range ids {
		out[i] = fence.Row{EntryID: id}
	}
	return out
}

// TestWatchForWatchesWhatItRanges: the second look watches the worker's
// guard, every entry of both windows and each candidate, and every entry it
// ranges is among those watched, each guard once.
func TestWatchForWatchesWhatItRanges(t *testing.T) {
	k := BuildKeys("b")
	first := firstLook{
		scans: []streamScan{
			{stream: StreamPriority, cand: fence.Row{EntryID: "9-0"}, hasCnd: true, window: rows("1-0", "2-0")},
			{stream: StreamUnits, window: rows("3-0", "4-0")},
		},
		looked: map[entryAt]bool{{StreamUnits, "4-0"}: true, {StreamPriority, "2-0"}: true},
	}
	w := watchFor(k, "wg", first)

	want := []string{"wg"}
	for _, at := range []entryAt{{StreamPriority, "9-0"}, {StreamPriority, "1-0"}, {StreamPriority, "2-0"}, {StreamUnits, "3-0"}, {StreamUnits, "4-0"}} {
		want = append(want, k.entryGuard(at.stream, at.id))
	}
	assert.ElementsMatch(t, want, w.Keys, "the worker's guard, the candidates and the windows, each once")
	assert.Equal(t, "wg", w.Keys[0], "the worker's guard first")
	assert.ElementsMatch(t, []entryAt{{StreamPriority, "9-0"}, {StreamUnits, "4-0"}, {StreamPriority, "2-0"}}, w.Ranged,
		"the candidates and the entries the walk must read")
	for _, at := range w.Ranged {
		assert.True(t, w.Watched[at], "%v is ranged, and watched", at)
	}
	assert.True(t, w.Covers(scannedEntries(first.scans)))
}

// TestWatchSetCovers: a second look whose windows name an entry, or a
// candidate, the watch set does not hold is not covered (errRetry).
func TestWatchSetCovers(t *testing.T) {
	k := BuildKeys("b")
	first := firstLook{scans: []streamScan{{stream: StreamUnits, window: rows("1-0", "2-0")}}}
	w := watchFor(k, "wg", first)
	require.True(t, w.Covers(scannedEntries(first.scans)))

	moved := []streamScan{{stream: StreamUnits, window: rows("2-0", "3-0")}}
	assert.False(t, w.Covers(scannedEntries(moved)), "3-0 came into the window after the first look")
	cand := []streamScan{{stream: StreamUnits, cand: fence.Row{EntryID: "7-0"}, hasCnd: true, window: rows("1-0")}}
	assert.False(t, w.Covers(scannedEntries(cand)), "a candidate the first look did not see")
	other := []streamScan{{stream: StreamPriority, window: rows("1-0")}}
	assert.False(t, w.Covers(scannedEntries(other)), "the same id in the other stream is another entry")
}
