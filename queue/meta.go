package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
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

// Mixed deployments. hopper's transitions are fenced on guard keys that
// every change to an entry's owner writes (see package fence). The
// transition script hopper replaces writes none, and neither does any
// other XACK or XCLAIM: a hopper reclaim that read an entry, then commits
// after the script finalized it, is not aborted, and the unit is finalized
// twice. No
// transaction can tell from the stream that this happened: WATCH does not
// see consumer-group changes, which is why the guards exist.
//
// So a build says who may run it. Publish writes metaGuarded in meta, in
// the transaction that lays the build out; the script's publishers do not.
// Transition, the entry point of callers moving from the script, refuses
// every transition that reads meta on a build without the mark, with
// ErrUnguarded, before it writes anything. A safe mode is not possible:
// whatever hopper watched, a script's settlement in between would not abort
// it. The check costs nothing more: the meta read every transition makes
// already (metaRead) asks for the mark in the same command. The typed API
// does not check: hopper's own workers publish the builds they run, and
// builds laid out by hand (tests, benchmarks) are theirs to run.
//
// Prebuilt events (worker_error, stale_rejected) are let through: they are
// appended, decide on no entry and do not read meta, so that a worker can
// report a build whose state is gone. See docs/design.md#mixed-deployments.

// ErrUnguarded: Transition was called on a build whose meta lacks the mark
// hopper's publisher writes (the build was laid out by the script's
// publisher, or by hand). Its other callers may be the script, which writes
// no guards, and hopper's fence cannot hold against them. Nothing was
// written. Switch all of a build's callers at once.
var ErrUnguarded = errors.New("queue: build not published as guarded")

// metaGuarded is the meta field that marks a build published by hopper.
const (
	metaGuarded = "guarded"
	guardedMark = "1"
)

// metaRead is the read of every transition's first check
// (docs/design.md#transitions): whether meta holds its state. It asks for
// meta's state, which only a publisher writes, in the transaction that
// creates meta, rather than for the key: a meta deleted or evicted between
// a settlement's reads and its commit (meta is read, not watched: every
// finalize writes it) is re-created by that commit's count, holding that
// field alone, and every transition after it must still find the build's
// state gone (docs/design.md#ttls). A Build that must run guarded builds
// only (Transition's) also asks for the mark, in the same command.
func (sc *schema) metaRead(c rueidis.DedicatedClient) rueidis.Completed {
	return sc.metaReadOn(c.B())
}

// metaReadOn is metaRead, built with bld.
func (sc *schema) metaReadOn(bld rueidis.Builder) rueidis.Completed {
	if sc.guardedOnly {
		return bld.Hmget().Key(sc.keys.Meta).Field(metaState, metaGuarded).Build()
	}
	return bld.Hexists().Key(sc.keys.Meta).Field(metaState).Build()
}

// metaFound reads metaRead's reply: whether meta holds its state. A meta
// that does but lacks the mark, on a Build that requires it, is
// ErrUnguarded; a missing meta is not (the caller reports it CORRUPT).
func (sc *schema) metaFound(r rueidis.RedisResult) (bool, error) {
	if !sc.guardedOnly {
		n, err := r.AsInt64()
		return n == 1, err
	}
	vals, err := fieldValues(r, 2, "HMGET meta")
	if err != nil {
		return false, err
	}
	if vals[0].IsNil() {
		return false, nil
	}
	if mark, _ := vals[1].ToString(); mark != guardedMark {
		return false, fmt.Errorf("%w: %s has no %s=%s field, so it was not published by hopper, and the reference script, which writes no guards, may be settling its units: run all of a build's callers on hopper, or all on the script",
			ErrUnguarded, sc.keys.Meta, metaGuarded, guardedMark)
	}
	return true, nil
}
