package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Build states written in meta's "state" field by the publisher.
const (
	StateReady      = "ready"
	StateInitFailed = "init_failed"
)

// Meta is a build's meta hash as the report needs it: the manifest the
// publisher froze, and the counters the transitions keep. Fields the
// publisher did not write are zero ("" for strings).
type Meta struct {
	State string // StateReady or StateInitFailed
	// ReadyAtMS is when the build was published (Redis server time, epoch
	// ms); 0 when absent. It counts as the first sign of life for idle time.
	ReadyAtMS      int64
	TotalUnits     int64
	FinalizedCount int64
	// TotalExamples is meta's total_examples when HasTotalExamples; see
	// Examples.
	TotalExamples    int64
	HasTotalExamples bool
	UnitType         string
	// UnitIDs is the manifest in order: meta's unit_ids (a JSON array), else
	// the keys of file_counts (a JSON object, in written order), else nil
	// (Run then reads the units stream).
	UnitIDs     []string
	LoadErrors  []string
	FileArgs    []string
	Seed        string
	Fingerprint string
	Revision    string
	// Fields is the hash as read, every field included.
	Fields map[string]string
}

// Examples is the number the empty-build and min-examples rules count. The
// original counts RSpec examples; hopper's units need not contain examples,
// so a build whose publisher wrote no total_examples counts its units.
func (m Meta) Examples() int64 {
	if m.HasTotalExamples {
		return m.TotalExamples
	}
	return m.TotalUnits
}

// ParseMeta reads meta as HGETALL returns it. A field the verdict depends on
// that is present but unreadable (a count that is not an integer, a unit
// list that is not JSON) is an ErrCorrupt error naming the field: guessing
// could turn a broken build green. total_units is required once the build
// is ready.
func ParseMeta(fields map[string]string) (Meta, error) {
	m := Meta{
		State: fields["state"], UnitType: fields["unit_type"], Seed: fields["seed"],
		Fingerprint: fields["fingerprint"], Revision: fields["revision"], Fields: fields,
	}
	ints := []struct {
		name string
		v    *int64
		has  *bool
	}{
		{"ready_at", &m.ReadyAtMS, nil},
		{"total_units", &m.TotalUnits, nil},
		{"finalized_count", &m.FinalizedCount, nil},
		{"total_examples", &m.TotalExamples, &m.HasTotalExamples},
	}
	for _, f := range ints {
		raw, ok := fields[f.name]
		if !ok || raw == "" {
			continue
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			return Meta{}, fmt.Errorf("%w: meta %s %q is not a count", ErrCorrupt, f.name, raw)
		}
		*f.v = n
		if f.has != nil {
			*f.has = true
		}
	}
	if m.State != StateReady && m.State != StateInitFailed {
		// Only a publisher writes meta's state, in the transaction that
		// creates meta. A meta without it is what a settlement's count
		// leaves when meta was deleted or evicted between the
		// settlement's reads and its commit: its manifest is gone, and
		// judged as a build of no units it could pass.
		return Meta{}, fmt.Errorf("%w: meta state %q is neither %q nor %q", ErrCorrupt, m.State, StateReady, StateInitFailed)
	}
	if _, ok := fields["total_units"]; !ok && m.State == StateReady {
		return Meta{}, fmt.Errorf("%w: meta has state %s but no total_units", ErrCorrupt, m.State)
	}

	var err error
	if raw, ok := fields["unit_ids"]; ok {
		if err = json.Unmarshal([]byte(raw), &m.UnitIDs); err != nil {
			return Meta{}, fmt.Errorf("%w: meta unit_ids: %v", ErrCorrupt, err)
		}
	} else if raw, ok := fields["file_counts"]; ok {
		if m.UnitIDs, err = objectKeys([]byte(raw)); err != nil {
			return Meta{}, fmt.Errorf("%w: meta file_counts: %v", ErrCorrupt, err)
		}
	}
	if raw, ok := fields["load_errors"]; ok && raw != "" {
		if err = json.Unmarshal([]byte(raw), &m.LoadErrors); err != nil {
			return Meta{}, fmt.Errorf("%w: meta load_errors: %v", ErrCorrupt, err)
		}
	}
	// file_args is informational: one that does not read is left out rather
	// than failing the build.
	if raw, ok := fields["file_args"]; ok {
		_ = json.Unmarshal([]byte(raw), &m.FileArgs)
	}
	return m, nil
}

// objectKeys returns the keys of a JSON object in the order written, which
// encoding/json's maps would lose.
func objectKeys(raw []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string)) // object keys are always strings
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
