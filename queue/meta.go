package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Meta is a build's meta hash read field by field, as any publisher may
// have left it (hopper's Publish, or the transition script's publisher,
// which lists its units in file_counts): what was published, and the
// counters the transitions keep.
// Fields that are not there are zero ("" for strings). Status and Join
// read the same fields, and require what hopper's Publish always writes
// (see Manifest).
type Meta struct {
	State string // StateReady or StateInitFailed, as meta holds it
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
	// (the units stream then has them, see ReadUnitIDs).
	UnitIDs     []string
	LoadErrors  []string
	FileArgs    []string
	Seed        string
	Fingerprint string
	Revision    string
	// Fields is the hash as read, every field included.
	Fields map[string]string
}

// Examples is the number the empty-build and min-examples rules count:
// units need not be examples, so a build whose publisher wrote no
// total_examples counts its units.
func (m Meta) Examples() int64 {
	if m.HasTotalExamples {
		return m.TotalExamples
	}
	return m.TotalUnits
}

// MetaError is ParseMeta's error: meta holds a field that cannot be
// trusted. errors.Is(err, ErrCorrupt) holds.
type MetaError struct {
	// Problem says what is wrong, naming the field and its value.
	Problem string
}

func (e *MetaError) Error() string { return ErrCorrupt.Error() + ": " + e.Problem }

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *MetaError) Unwrap() error { return ErrCorrupt }

func metaErrorf(format string, args ...any) error {
	return &MetaError{Problem: fmt.Sprintf(format, args...)}
}

// ParseMeta reads meta as HGETALL returns it. A field a verdict depends on
// that is present but unreadable (a count that is not a whole number, a
// unit list that is not JSON) is a *MetaError naming the field: guessing
// could turn a broken build green. total_units is required once the build
// is ready.
func ParseMeta(fields map[string]string) (Meta, error) {
	m := Meta{
		State: fields[metaState], UnitType: fields[metaUnitType], Seed: fields[metaSeed],
		Fingerprint: fields[metaFingerprint], Revision: fields[metaRevision], Fields: fields,
	}
	if err := m.parseCounts(fields); err != nil {
		return Meta{}, err
	}
	if m.State != stateReady && m.State != stateInitFailed {
		// Only a publisher writes meta's state, in the transaction that
		// creates meta. A meta without it is what a settlement's count
		// leaves when meta was deleted or evicted between the
		// settlement's reads and its commit: its manifest is gone, and
		// judged as a build of no units it could pass.
		return Meta{}, metaErrorf("meta state %q is neither %q nor %q", m.State, stateReady, stateInitFailed)
	}
	if _, ok := fields[metaTotalUnits]; !ok && m.State == stateReady {
		return Meta{}, metaErrorf("meta has state %s but no total_units", m.State)
	}
	if err := m.parseLists(fields); err != nil {
		return Meta{}, err
	}
	return m, nil
}

// parseCounts reads meta's counts; an empty one is absent.
func (m *Meta) parseCounts(fields map[string]string) error {
	ints := []struct {
		name string
		v    *int64
		has  *bool
	}{
		{metaReadyAt, &m.ReadyAtMS, nil},
		{metaTotalUnits, &m.TotalUnits, nil},
		{metaFinalized, &m.FinalizedCount, nil},
		{metaTotalExamples, &m.TotalExamples, &m.HasTotalExamples},
	}
	for _, f := range ints {
		raw, ok := fields[f.name]
		if !ok || raw == "" {
			continue
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			return metaErrorf("meta %s %q is not a count", f.name, raw)
		}
		*f.v = n
		if f.has != nil {
			*f.has = true
		}
	}
	return nil
}

// parseLists reads meta's JSON lists: the units, the load errors and the
// file arguments.
func (m *Meta) parseLists(fields map[string]string) error {
	var err error
	if raw, ok := fields[metaUnitIDs]; ok {
		if err = json.Unmarshal([]byte(raw), &m.UnitIDs); err != nil {
			return metaErrorf("meta unit_ids: %v", err)
		}
	} else if raw, ok := fields[metaFileCounts]; ok {
		if m.UnitIDs, err = objectKeys([]byte(raw)); err != nil {
			return metaErrorf("meta file_counts: %v", err)
		}
	}
	if raw, ok := fields[metaLoadErrors]; ok && raw != "" {
		if err = json.Unmarshal([]byte(raw), &m.LoadErrors); err != nil {
			return metaErrorf("meta load_errors: %v", err)
		}
	}
	// file_args is informational: one that does not read is left out rather
	// than failing the build.
	if raw, ok := fields[metaFileArgs]; ok {
		_ = json.Unmarshal([]byte(raw), &m.FileArgs)
	}
	return nil
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
