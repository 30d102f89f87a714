package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Summary is the JSON summary (`--summary-out`): its fields are in a fixed
// key order, which scripts and dashboards may depend on. Values the
// report never learned are null (state, totals and manifest fields of a
// build that never appeared); lists are never null.
type Summary struct {
	BuildID    string  `json:"build_id"`
	State      *string `json:"state"`
	Verdict    Verdict `json:"verdict"`
	ExitCode   int     `json:"exit_code"`
	Message    string  `json:"message"`
	TotalUnits *int64  `json:"total_units"`
	UnitType   *string `json:"unit_type"`
	// TotalExamples is Meta.Examples: meta's total_examples, else the
	// number of units.
	TotalExamples  *int64            `json:"total_examples"`
	FinalizedCount *int64            `json:"finalized_count"`
	Failed         []FailedUnit      `json:"failed"`
	Flaky          []string          `json:"flaky"`
	NeverFinalized []UnfinalizedUnit `json:"never_finalized"`
	Abandoned      []string          `json:"abandoned"`
	RetryCounts    UnitCounts        `json:"retry_counts"`
	ReclaimCounts  UnitCounts        `json:"reclaim_counts"`
	// WorkerErrors are the worker_error events exactly as logged.
	WorkerErrors []json.RawMessage `json:"worker_errors"`
	// StaleRejections counts the stale_rejected events.
	StaleRejections int       `json:"stale_rejections"`
	Workers         workerMap `json:"workers"`
	LoadErrors      []string  `json:"load_errors"`
	FileArgs        []string  `json:"file_args"`
	// Seed is a JSON number when meta's seed is an integer, else a
	// string, else null.
	Seed        json.RawMessage `json:"seed"`
	Fingerprint *string         `json:"fingerprint"`
	Revision    *string         `json:"revision"`
	// Units are the per-unit figures: final outcome and each attempt.
	Units []UnitFigures `json:"units"`
	// FailedTests names, per unit, the tests its final attempt reported
	// failed; FlakyTests those that failed in an earlier attempt and
	// passed in the final one. Units that gave no per-test results are
	// not listed.
	FailedTests map[string][]string `json:"failed_tests"`
	FlakyTests  map[string][]string `json:"flaky_tests"`
	// Rounds is the build's number of rounds; UnitRounds maps each unit a
	// later round ran again to the round its result is from.
	Rounds     int            `json:"rounds"`
	UnitRounds map[string]int `json:"unit_rounds"`
}

// Summary returns the JSON summary of the report.
func (r *Report) Summary() Summary {
	s := Summary{
		BuildID: r.BuildID, State: optional(r.State), Verdict: r.Verdict, ExitCode: r.ExitCode,
		Message: r.Headline, FinalizedCount: r.FinalizedCount,
		Failed: r.log().Failed(), Flaky: r.log().Flaky(), NeverFinalized: r.NeverFinalized(),
		Abandoned: r.log().Abandoned(), RetryCounts: r.log().RetryCounts(), ReclaimCounts: r.log().ReclaimCounts(),
		WorkerErrors: []json.RawMessage{}, StaleRejections: len(r.log().StaleRejections()),
		Workers: workerMap(r.Workers), LoadErrors: []string{}, FileArgs: []string{}, Seed: json.RawMessage("null"),
		Units:       r.Units(),
		FailedTests: r.FailedTests(), FlakyTests: r.FlakyTests(),
		Rounds: max(r.Rounds, 1), UnitRounds: map[string]int{},
	}
	for u, round := range r.UnitRounds {
		s.UnitRounds[u] = round
	}
	for _, e := range r.log().WorkerErrors() {
		s.WorkerErrors = append(s.WorkerErrors, e.Raw)
	}
	if m := r.Meta; m != nil {
		total, examples := m.TotalUnits, m.Examples()
		s.TotalUnits, s.TotalExamples = &total, &examples
		s.UnitType, s.Fingerprint, s.Revision = optional(m.UnitType), optional(m.Fingerprint), optional(m.Revision)
		if m.LoadErrors != nil {
			s.LoadErrors = m.LoadErrors
		}
		if m.FileArgs != nil {
			s.FileArgs = m.FileArgs
		}
		s.Seed = seedJSON(m.Seed)
	}
	return s
}

// JSON returns the summary pretty-printed (two-space indent, no HTML
// escaping) with a trailing newline.
func (s Summary) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("report: encoding summary of build %s: %w", s.BuildID, err)
	}
	return buf.Bytes(), nil
}

// WriteSummary writes the JSON summary to path, creating its parent folders.
func (r *Report) WriteSummary(path string) error {
	b, err := r.Summary().JSON()
	if err != nil {
		return err
	}
	return writeFile(path, b)
}

// FailedIDs is what `--failed-out` lists: the failed units, then the units
// never finalized, so that a rerun covers everything that did not pass.
func (r *Report) FailedIDs() []string {
	var ids []string
	for _, f := range r.log().Failed() {
		ids = append(ids, f.UnitID)
	}
	for _, u := range r.NeverFinalized() {
		ids = append(ids, u.UnitID)
	}
	return ids
}

// WriteFailed writes FailedIDs to path, one a line, creating its parent
// folders. The file is written whatever the verdict, empty when nothing
// failed, so a CI step that reads it never finds a stale one.
func (r *Report) WriteFailed(path string) error {
	var b strings.Builder
	for _, id := range r.FailedIDs() {
		b.WriteString(id)
		b.WriteByte('\n')
	}
	return writeFile(path, []byte(b.String()))
}

func writeFile(path string, b []byte) error {
	if err := WriteFile(path, b); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// WriteFile writes b to path, creating its parent folders, whole or not at
// all: a regular file (or a new one) is written to a temporary file beside
// it, renamed over path once complete. A write that fails part way, on a
// full disk say, leaves no file at path: a cut JUnit or summary would be
// misread by CI, and an earlier build's file (a green JUnit, a list of
// failed units) would stand for this build. Anything else at path (a
// device such as /dev/stdout, a pipe, a symbolic link) is written directly,
// as it is not replaced. The error names path. Every file of the report is
// written with it; it is exported for the renderings made outside this
// package (the HTML report). An empty path is refused: there is no file
// to name, and the temporary file would land in the working folder.
func WriteFile(path string, b []byte) error {
	if path == "" {
		return errors.New("writing a report file: no path given")
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return os.WriteFile(path, b, 0o644)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes it 0600; the report is for everyone to read
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		_ = os.Remove(path) // a regular file or nothing: checked above
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // it names the temporary file, not path
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func seedJSON(seed string) json.RawMessage {
	if seed == "" {
		return json.RawMessage("null")
	}
	if n, err := strconv.ParseInt(seed, 10, 64); err == nil {
		return json.RawMessage(strconv.FormatInt(n, 10))
	}
	b, _ := marshalNoEscape(seed)
	return b
}
