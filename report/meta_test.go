package report_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/report"
)

func TestParseMeta(t *testing.T) {
	m, err := report.ParseMeta(map[string]string{
		"state": "ready", "ready_at": "1733143440000", "total_units": "3", "finalized_count": "1",
		"unit_type": "package", "file_counts": `{"./z":4,"./a":1,"./m":2}`, "load_errors": `[]`,
		"file_args": `["./..."]`, "seed": "9", "fingerprint": "f", "revision": "r",
	})
	require.NoError(t, err)
	require.Equal(t, []string{"./z", "./a", "./m"}, m.UnitIDs, "file_counts keys in written order")
	require.Equal(t, int64(3), m.Examples(), "no total_examples: the units count")
	require.Equal(t, int64(1733143440000), m.ReadyAtMS)
	require.Equal(t, []string{"./..."}, m.FileArgs)

	m, err = report.ParseMeta(map[string]string{"state": "ready", "total_units": "2", "total_examples": "0", "unit_ids": `["b","a"]`, "file_counts": `{"x":1}`})
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, m.UnitIDs, "unit_ids wins over file_counts")
	require.Equal(t, int64(0), m.Examples(), "total_examples 0 is 0, not the units count")
}

func TestParseMetaRefusesWhatTheVerdictCannotTrust(t *testing.T) {
	tests := []struct {
		name    string
		fields  map[string]string
		mention string
	}{
		{"total_units not a number", map[string]string{"state": "ready", "total_units": "three"}, `total_units "three"`},
		{"negative count", map[string]string{"state": "ready", "total_units": "1", "finalized_count": "-1"}, "finalized_count"},
		{"ready without total_units", map[string]string{"state": "ready"}, "no total_units"},
		{"unit_ids not JSON", map[string]string{"state": "ready", "total_units": "1", "unit_ids": "[a"}, "unit_ids"},
		{"file_counts not an object", map[string]string{"state": "ready", "total_units": "1", "file_counts": "[1]"}, "file_counts"},
		{"load_errors not a list", map[string]string{"state": "init_failed", "load_errors": `"x"`}, "load_errors"},
		{"no state: a count left where meta was deleted", map[string]string{"finalized_count": "1"}, `meta state ""`},
		{"a state no publisher writes", map[string]string{"state": "done", "total_units": "1"}, `meta state "done"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := report.ParseMeta(tc.fields)
			require.ErrorIsf(t, err, report.ErrCorrupt, "got error %v, want %v", err, report.ErrCorrupt)
			require.Containsf(t, err.Error(), tc.mention, "got error %q, want it to mention %q", err, tc.mention)
		})
	}
}

func TestAZeroReportRenders(t *testing.T) {
	var r report.Report
	_, err := r.JUnit()
	require.NoError(t, err)
	_, err = r.Summary().JSON()
	require.NoError(t, err)
	require.Empty(t, r.FailedIDs())
}

func FuzzParseMeta(f *testing.F) {
	f.Add("ready", "3", "2", `["a","b","c"]`, `{"a":1}`, `[]`)
	f.Add("init_failed", "", "", "", "", `["boom"]`)
	f.Add("ready", "1", "x", `[`, `{"a":`, `{}`)
	f.Fuzz(func(t *testing.T, state, total, examples, unitIDs, fileCounts, loadErrors string) {
		fields := map[string]string{"state": state, "total_units": total, "total_examples": examples, "file_counts": fileCounts, "load_errors": loadErrors}
		if unitIDs != "" {
			fields["unit_ids"] = unitIDs
		}
		m, err := report.ParseMeta(fields)
		if err != nil {
			return
		}
		// Whatever parses judges without panicking.
		r := report.Judge(report.Observation{BuildID: "b", Presence: report.PresenceMeta, Meta: m, Manifest: m.UnitIDs}, report.Options{})
		if _, err := r.Summary().JSON(); err != nil {
			t.Fatalf("summary of %v: %v", fields, err)
		}
	})
}
