package timings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Version is the encoding's version: a store written by another version is
// read as corrupt (the caller warns and goes on without it).
const Version = 1

// MaxUnitBytes bounds a unit id in a table, as the queue bounds unit ids.
const MaxUnitBytes = 1024

// ErrCorrupt: encoded bytes are not a table of this version. The error
// names what is wrong.
var ErrCorrupt = errors.New("timings: not a timings table")

// Table is the expected duration of each unit of a suite.
type Table map[string]time.Duration

// wire is a Table as stored: durations in milliseconds, fractions kept.
type wire struct {
	Version int                `json:"version"`
	Units   map[string]float64 `json:"units"`
}

// Encode returns t as stored: compact JSON, units sorted by id.
func (t Table) Encode() []byte {
	w := wire{Version: Version, Units: make(map[string]float64, len(t))}
	for u, d := range t {
		w.Units[u] = float64(d) / float64(time.Millisecond)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		panic("timings: encoding " + err.Error()) // strings and finite numbers always encode
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Decode reads a table written by Encode. Anything else is ErrCorrupt
// naming the first bad part: another version, a unit id that is empty,
// too long or not UTF-8, a duration that is negative or out of range.
func Decode(b []byte) (Table, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the table", ErrCorrupt)
	}
	if w.Version != Version {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, w.Version, Version)
	}
	t := make(Table, len(w.Units))
	for u, ms := range w.Units {
		if u == "" || len(u) > MaxUnitBytes || !utf8.ValidString(u) {
			return nil, fmt.Errorf("%w: unit id %.80q", ErrCorrupt, u)
		}
		if math.IsNaN(ms) || ms < 0 || ms*float64(time.Millisecond) >= math.MaxInt64 {
			return nil, fmt.Errorf("%w: unit %.80q has duration %v ms", ErrCorrupt, u, ms)
		}
		t[u] = time.Duration(ms * float64(time.Millisecond))
	}
	return t, nil
}

// Merge returns old with the durations of recent written over it: units
// this build did not run keep what an earlier build measured.
func Merge(old, recent Table) Table {
	out := make(Table, len(old)+len(recent))
	for u, d := range old {
		out[u] = d
	}
	for u, d := range recent {
		out[u] = d
	}
	return out
}
