package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/report"
)

// summaryKeys is the summary's documented key order, which scripts may
// depend on.
var summaryKeys = []string{
	"build_id", "state", "verdict", "exit_code", "message", "total_units", "unit_type",
	"total_examples", "finalized_count", "failed", "flaky", "never_finalized", "abandoned",
	"retry_counts", "reclaim_counts", "worker_errors", "stale_rejections", "workers",
	"load_errors", "file_args", "seed", "fingerprint", "revision", "units",
	"failed_tests", "flaky_tests", "rounds", "unit_rounds",
}

// topLevelKeys returns the keys of a JSON object in the order written.
func topLevelKeys(t testing.TB, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

func TestSummaryKeyOrder(t *testing.T) {
	for name, r := range map[string]*report.Report{
		"failed build": failedBuild(t),
		"missing":      report.Judge(report.Observation{BuildID: "b"}, report.Options{}),
	} {
		t.Run(name, func(t *testing.T) {
			b, err := r.Summary().JSON()
			require.NoError(t, err)
			got := topLevelKeys(t, b)
			require.Equalf(t, summaryKeys, got, "got keys %v, want %v", got, summaryKeys)
		})
	}
}

func TestSummaryOfAFailedBuild(t *testing.T) {
	b, err := failedBuild(t).Summary().JSON()
	require.NoError(t, err)
	want := `{
  "build_id": "b1",
  "state": "ready",
  "verdict": "failed",
  "exit_code": 1,
  "message": "1 of 4 units failed",
  "total_units": 4,
  "unit_type": "package",
  "total_examples": 4,
  "finalized_count": 4,
  "failed": [
    {
      "unit_id": "./c",
      "reason": "test_failure",
      "worker_id": "w1",
      "errors": [
        {
          "example_id": "x[1:1]",
          "description": "does a thing",
          "class": "AssertionError",
          "message": "want 1\ngot 2",
          "backtrace": [
            "x_test.go:3",
            "x_test.go:9"
          ]
        },
        {
          "example_id": "x[1:1]",
          "description": "does a thing",
          "class": "Second",
          "message": "s",
          "backtrace": [
            "x_test.go:3",
            "x_test.go:9"
          ]
        }
      ]
    }
  ],
  "flaky": [
    "./b"
  ],
  "never_finalized": [],
  "abandoned": [
    "./d"
  ],
  "retry_counts": {
    "./b": 1
  },
  "reclaim_counts": {
    "./d": 1
  },
  "worker_errors": [
    {
      "type": "worker_error",
      "worker_id": "w2",
      "phase": "execution",
      "unit_id": null,
      "class": "*os.PathError",
      "message": "open x: no such file\nmore",
      "backtrace": [
        "main.go:1"
      ],
      "at_ms": 1733143440012
    }
  ],
  "stale_rejections": 1,
  "workers": {
    "w1": {
      "last_seen": 1733143440200,
      "current_unit": null,
      "processed": 4
    },
    "w2": {
      "last_seen": 1733143440100,
      "current_unit": null,
      "processed": 2
    }
  },
  "load_errors": [],
  "file_args": [
    "./..."
  ],
  "seed": 1234,
  "fingerprint": "f00d",
  "revision": "abc123",
  "units": [
    {
      "unit_id": "./a",
      "outcome": "passed",
      "attempts": [
        {
          "worker_id": "w1",
          "end": "passed",
          "start_ms": 1733143440000,
          "end_ms": 1733143440001,
          "duration_ms": 1200,
          "ran": true
        }
      ]
    },
    {
      "unit_id": "./b",
      "outcome": "passed",
      "attempts": [
        {
          "worker_id": "w2",
          "end": "requeued",
          "start_ms": 1733143440002,
          "end_ms": 1733143440003,
          "duration_ms": 250,
          "ran": true
        },
        {
          "worker_id": "w1",
          "end": "passed",
          "start_ms": 1733143440004,
          "end_ms": 1733143440005,
          "duration_ms": 800,
          "ran": true
        }
      ]
    },
    {
      "unit_id": "./c",
      "outcome": "failed",
      "attempts": [
        {
          "worker_id": "w1",
          "end": "failed",
          "start_ms": 1733143440006,
          "end_ms": 1733143440007,
          "duration_ms": 2500,
          "ran": true
        }
      ]
    },
    {
      "unit_id": "./d",
      "outcome": "passed",
      "attempts": [
        {
          "worker_id": "w2",
          "end": "stale",
          "start_ms": 1733143440008,
          "end_ms": 1733143440011,
          "duration_ms": 3,
          "ran": true
        },
        {
          "worker_id": "w1",
          "end": "passed",
          "start_ms": 1733143440010,
          "end_ms": 1733143440013,
          "duration_ms": 50,
          "ran": true
        }
      ]
    }
  ],
  "failed_tests": {},
  "flaky_tests": {},
  "rounds": 1,
  "unit_rounds": {}
}
`
	require.Equalf(t, want, string(b), "got\n%s", b)
}

func TestSummaryOfAMissingBuild(t *testing.T) {
	b, err := report.Judge(report.Observation{BuildID: "b"}, report.Options{}).Summary().JSON()
	require.NoError(t, err)
	want := `{
  "build_id": "b",
  "state": null,
  "verdict": "missing",
  "exit_code": 2,
  "message": "build b never initialized (no manifest or tombstone after 300s)",
  "total_units": null,
  "unit_type": null,
  "total_examples": null,
  "finalized_count": null,
  "failed": [],
  "flaky": [],
  "never_finalized": [],
  "abandoned": [],
  "retry_counts": {},
  "reclaim_counts": {},
  "worker_errors": [],
  "stale_rejections": 0,
  "workers": {},
  "load_errors": [],
  "file_args": [],
  "seed": null,
  "fingerprint": null,
  "revision": null,
  "units": [],
  "failed_tests": {},
  "flaky_tests": {},
  "rounds": 1,
  "unit_rounds": {}
}
`
	require.Equalf(t, want, string(b), "got\n%s", b)
}

func TestSummarySeed(t *testing.T) {
	for seed, want := range map[string]string{"": `null`, "42": `42`, "007": `7`, "random": `"random"`} {
		r := report.Judge(report.Observation{BuildID: "b", Presence: report.PresenceMeta, Meta: report.Meta{State: report.StateReady, Seed: seed}}, report.Options{AllowEmpty: true})
		got := string(r.Summary().Seed)
		require.Equalf(t, want, got, "seed %q: got %s, want %s", seed, got, want)
	}
}

func TestWriteSummaryAndFailed(t *testing.T) {
	dir := t.TempDir()
	log := newLog(t).
		delivered("a", "w1").failed("a", "w1", 1).
		delivered("b", "w1").passed("b", "w1", 1).
		delivered("c", "w2").failed("c", "w2", 1).
		delivered("e", "w2").
		events()
	obs := complete([]string{"a", "b", "c", "d", "e"}, 3, log)
	obs.Stall = &report.Stall{Cause: report.StallTimeout}
	r := report.Judge(obs, report.Options{})

	summary := filepath.Join(dir, "out", "deep", "summary.json")
	require.NoError(t, r.WriteSummary(summary))
	b, err := os.ReadFile(summary)
	require.NoError(t, err)
	require.Truef(t, bytes.HasSuffix(b, []byte("}\n")), "got summary ending %q, want a trailing newline", b[len(b)-3:])
	var s map[string]any
	require.NoError(t, json.Unmarshal(b, &s))
	require.Equal(t, "incomplete", s["verdict"])
	require.Equal(t, float64(3), s["exit_code"])

	failed := filepath.Join(dir, "other", "failed.txt")
	require.NoError(t, r.WriteFailed(failed))
	b, err = os.ReadFile(failed)
	require.NoError(t, err)
	require.Equalf(t, "a\nc\nd\ne\n", string(b), "got %q: want failed ids, then never-finalized ids in manifest order", b)

	// Written, empty, when nothing failed, replacing a stale file.
	passed := report.Judge(complete([]string{"b"}, 1, newLog(t).delivered("b", "w").passed("b", "w", 1).events()), report.Options{})
	require.NoError(t, passed.WriteFailed(failed))
	b, err = os.ReadFile(failed)
	require.NoError(t, err)
	require.Emptyf(t, b, "got %q, want an empty file", b)
}
