package report_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/report"
)

func TestConsoleFailedBuild(t *testing.T) {
	var out strings.Builder
	require.NoError(t, failedBuild(t).WriteConsole(&out))
	want := `report: build b1: failed
  1 of 4 units failed
  units: 4 total, 4 finalized
  failed: ./c (test_failure, worker w1) AssertionError: want 1
  flaky (passed after requeue): ./b
  abandoned (exceeded --max-unit-duration): ./d
  worker error: w2 execution *os.PathError: open x: no such file
`
	require.Equalf(t, want, out.String(), "got\n%s\nwant\n%s", out.String(), want)
}

func TestConsoleWithoutManifest(t *testing.T) {
	var out strings.Builder
	r := report.Judge(report.Observation{BuildID: "gone", Presence: report.PresenceTombstone}, report.Options{})
	require.NoError(t, r.WriteConsole(&out))
	want := `report: build gone: expired
  build gone was previously initialized; its state is gone (expired or evicted)
  units: unknown (no manifest)
`
	require.Equalf(t, want, out.String(), "got\n%s\nwant\n%s", out.String(), want)
}

func TestConsoleIncomplete(t *testing.T) {
	log := newLog(t).delivered("a", "w1").events()
	obs := complete([]string{"a", "b"}, 0, log)
	obs.Stall = &report.Stall{Cause: report.StallTimeout}
	var out strings.Builder
	require.NoError(t, report.Judge(obs, report.Options{}).WriteConsole(&out))
	want := `report: build b1: incomplete
  incomplete: 0 of 2 units finalized after 1080s (--wait)
  units: 2 total, 0 finalized
  never finalized: a (last worker w1)
  never finalized: b (never delivered)
`
	require.Equalf(t, want, out.String(), "got\n%s\nwant\n%s", out.String(), want)
}
