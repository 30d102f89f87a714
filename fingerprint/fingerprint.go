package fingerprint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
)

// Input names: the keys of Fingerprint.Inputs, as Diff reports them.
const (
	InputCommand  = "command"
	InputRevision = "revision"
	InputUnitIDs  = "unit_ids"
	InputUnitType = "unit_type"
)

// DigestLen is the length in hex digits of an input's short digest: enough
// that two different values of one input never collide in practice, short
// enough to print.
const DigestLen = 16

// Inputs decide which suite a worker would run. Strings are hashed as JSON
// text, so invalid UTF-8 reads as U+FFFD.
type Inputs struct {
	// UnitIDs are the build's units, in order: the same units in another
	// order are another build (the order decides who runs what first).
	UnitIDs []string
	// UnitType is what the units are ("file", "package", ...).
	UnitType string
	// Command is the template each unit runs under, e.g. "go test {unit}".
	Command string
	// Revision is the source revision under test; empty when unknown.
	Revision string
}

// canonical is Inputs as hashed: keys in sorted order, unit ids never null.
type canonical struct {
	Command  string   `json:"command"`
	Revision string   `json:"revision"`
	UnitIDs  []string `json:"unit_ids"`
	UnitType string   `json:"unit_type"`
}

// Fingerprint identifies a suite.
type Fingerprint struct {
	// Sum is the SHA-256, in lowercase hex, of the inputs' canonical JSON.
	Sum string
	// Inputs maps each input name (InputCommand, ...) to the first DigestLen
	// hex digits of the SHA-256 of that input's own canonical JSON.
	Inputs map[string]string
}

// Of returns the fingerprint of in. A nil UnitIDs hashes as an empty list.
func Of(in Inputs) Fingerprint {
	ids := in.UnitIDs
	if ids == nil {
		ids = []string{}
	}
	c := canonical{Command: in.Command, Revision: in.Revision, UnitIDs: ids, UnitType: in.UnitType}
	return Fingerprint{
		Sum: sum(c),
		Inputs: map[string]string{
			InputCommand:  sum(c.Command)[:DigestLen],
			InputRevision: sum(c.Revision)[:DigestLen],
			InputUnitIDs:  sum(c.UnitIDs)[:DigestLen],
			InputUnitType: sum(c.UnitType)[:DigestLen],
		},
	}
}

// IsZero reports whether f is the zero Fingerprint (none computed).
func (f Fingerprint) IsZero() bool { return f.Sum == "" && len(f.Inputs) == 0 }

// Equal reports whether a and b name the same suite.
func Equal(a, b Fingerprint) bool { return a.Sum == b.Sum }

// Diff returns, sorted, the names of the inputs whose digests differ between
// a and b, an input missing from either side counting as different. It
// returns nil when the sums are equal. Sums that differ while every digest
// agrees (fingerprints made by another hashing scheme) give an empty,
// non-nil list: different, but no input to blame.
func Diff(a, b Fingerprint) []string {
	if Equal(a, b) {
		return nil
	}
	out := []string{}
	for _, name := range []string{InputCommand, InputRevision, InputUnitIDs, InputUnitType} {
		da, okA := a.Inputs[name]
		db, okB := b.Inputs[name]
		if !okA || !okB || da != db {
			out = append(out, name)
		}
	}
	for _, m := range []map[string]string{a.Inputs, b.Inputs} {
		for name := range m {
			if !slices.Contains(out, name) && a.Inputs[name] != b.Inputs[name] {
				out = append(out, name) // an input this version does not know
			}
		}
	}
	slices.Sort(out)
	return out
}

// sum hashes the canonical JSON of v.
func sum(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Strings and slices of strings always encode.
		panic("fingerprint: encoding inputs: " + err.Error())
	}
	h := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(h[:])
}
