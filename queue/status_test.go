package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publishedMeta is meta as Publish leaves a ready build of m.
func publishedMeta(t *testing.T, m Manifest) map[string]string {
	t.Helper()
	m, err := m.normalized(time.Hour)
	require.NoError(t, err)
	f := m.metaFields()
	f[metaState], f[metaReadyAt], f[metaFinalized], f[metaRequeuedUnits] = stateReady, "1733143440000", "0", "0"
	return f
}

// TestParseStatusReadsWhatPublishWrites: Status reads back the manifest
// Publish froze, through ParseMeta.
func TestParseStatusReadsWhatPublishWrites(t *testing.T) {
	m := Manifest{UnitIDs: []string{"b", "a"}, UnitType: "package", TotalExamples: 7, Seed: "9", Revision: "r",
		Budgets: Budgets{MaxRequeues: 2, RequeueTolerance: 0.5, MaxReclaims: 1}, Timeout: 1500 * time.Millisecond}
	s, err := parseStatus(publishedMeta(t, m))
	require.NoError(t, err)
	want, _ := m.normalized(time.Hour)
	assert.True(t, s.Manifest.Equal(want), "got %+v, want %+v", s.Manifest, want)
	assert.Equal(t, StateReady, s.State)
	assert.Equal(t, int64(1733143440000), s.ReadyAtMS)
}

// TestParseStatusRequiresWhatPublishWrites: what ParseMeta lets a report
// read (a unit list in file_counts, empty counts) a joiner refuses, since
// hopper's Publish never writes it; a negative count neither reads.
func TestParseStatusRequiresWhatPublishWrites(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(map[string]string)
		mention string
	}{
		{"units in file_counts only", func(f map[string]string) {
			delete(f, metaUnitIDs)
			f[metaFileCounts] = `{"a":1}`
		}, "lacks unit_ids"},
		{"no unit_type", func(f map[string]string) { delete(f, metaUnitType) }, "lacks unit_type"},
		{"no ready_at", func(f map[string]string) { delete(f, metaReadyAt) }, "ready_at"},
		{"empty finalized_count", func(f map[string]string) { f[metaFinalized] = "" }, "finalized_count"},
		{"empty total_examples", func(f map[string]string) { f[metaTotalExamples] = "" }, "total_examples"},
		{"empty load_errors", func(f map[string]string) { f[metaLoadErrors] = "" }, "load_errors"},
		{"total_units not the list's length", func(f map[string]string) { f[metaTotalUnits] = "3" }, "total_units"},
		{"negative finalized_count", func(f map[string]string) { f[metaFinalized] = "-1" }, "finalized_count"},
		{"no state", func(f map[string]string) { delete(f, metaState) }, `meta state ""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := publishedMeta(t, Manifest{UnitIDs: []string{"a"}, TotalExamples: 1})
			c.edit(f)
			_, err := parseStatus(f)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), c.mention)
		})
	}
}
