package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command and --batch that do not go together are refused before
// anything runs, naming the value.
func TestBatchUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"both placeholders", []string{"run", "u", "--", "echo", "{unit}", "{units}"}, `hopper run: the command has both {unit} and {units}`},
		{"batch zero", []string{"run", "--batch", "0", "u", "--", "echo", "{units}"}, `hopper run: --batch must be a whole number, at least 1, got "0"`},
		{"batch text", []string{"work", "--build", "b", "--redis", "redis://127.0.0.1:1", "--batch", "many", "u", "--", "echo", "{units}"}, `hopper work: --batch must be a whole number, at least 1, got "many"`},
		{"batch with {unit}", []string{"run", "--batch", "4", "u", "--", "echo", "{unit}"}, `hopper run: --batch 4 needs {units} in the command`},
		{"{units} inside a word", []string{"run", "u", "--", "echo", "--pkgs={units}"}, `hopper run: {units} must be an argument of its own (each unit id becomes one argument), got "--pkgs={units}"`},
		{"empty --timings", []string{"run", "--timings", "", "u", "--", "true"}, `hopper run: --timings must name a file, or off`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := hopper(t, dir, baseEnv(), tc.args...)
			assert.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			assert.Contains(t, errs, tc.want)
			assert.Empty(t, out, "nothing ran")
		})
	}
}

// hopper run with {units} and --batch: one command per batch, each
// unit's own outcome from the go test -json events it prints, and a failed
// batch without per-unit events split into runs of one unit each.
func TestRunBatches(t *testing.T) {
	dir := fixture(t, map[string]string{
		// Prints a go test -json pass for each unit but "bad", a fail for it.
		"gojson.sh": `echo "$*" >> state/runs.log
for u; do a=pass; [ "$u" = bad ] && a=fail
echo "{\"Action\":\"$a\",\"Package\":\"$u\",\"Elapsed\":0.01}"; done`,
		// Reports nothing per unit; fails when "bad" is among its arguments.
		"plain.sh": `echo "$*" >> state/runs.log
for u; do [ "$u" = bad ] && exit 1; done; exit 0`,
	})
	for _, script := range []string{"gojson.sh", "plain.sh"} {
		t.Run(script, func(t *testing.T) {
			log := filepath.Join(dir, "state", "runs.log")
			os.Remove(log)
			sumPath := filepath.Join(dir, script+".json")
			code, out, errs := hopper(t, dir, baseEnv(), "run", "-j", "1", "--progress", "off", "--timings", "off", "--batch", "3",
				"--summary-out", sumPath, "a", "bad", "c", "--", "sh", script, "{units}")
			require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			s := readSummary(t, sumPath)
			require.Len(t, s.Failed, 1)
			assert.Equal(t, "bad", s.Failed[0].UnitID)
			assert.Equal(t, 3, s.FinalizedCount)
			runs, err := os.ReadFile(log)
			require.NoError(t, err)
			want := "a bad c\n"
			if script == "plain.sh" {
				want += "a\nbad\nc\n" // the split
			}
			assert.Equal(t, want, string(runs))
		})
	}
}
