package events

import (
	"encoding/json"
	"math"
	"strconv"
)

// The events of a unit's life (delivered, finalized, requeued, abandoned,
// reclaimed) are written on almost every transition, and they are a few
// fixed shapes. They are written here field by field, in one allocation,
// where encoding/json would reflect on each and allocate several times.
// The bytes are exactly those marshal writes of the same wire struct:
// wire_json_test.go holds every shape to it. Strings and embedded JSON that
// need escaping or compacting, which the log's ids never do, go through
// encoding/json (marshalled).

// jsonOut appends one JSON object, its fields in the order they are given.
// err is the first value encoding/json refused, which checked values never
// are.
type jsonOut struct {
	b   []byte
	err error
}

// newJSONOut starts an object with room for size bytes.
func newJSONOut(size int) jsonOut {
	o := jsonOut{b: make([]byte, 0, size)}
	o.b = append(o.b, '{')
	return o
}

// bytes closes the object and returns it.
func (o *jsonOut) bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	return append(o.b, '}'), nil
}

func (o *jsonOut) key(k string) {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonOut) str(k, v string) {
	o.key(k)
	if !plainASCII(v) {
		o.marshalled(v)
		return
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, v...)
	o.b = append(o.b, '"')
}

// strOrNull writes nil as null, as encoding/json writes a nil *string.
func (o *jsonOut) strOrNull(k string, v *string) {
	if v == nil {
		o.key(k)
		o.b = append(o.b, "null"...)
		return
	}
	o.str(k, *v)
}

func (o *jsonOut) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonOut) float(k string, v float64) {
	o.key(k)
	o.b = appendJSONFloat(o.b, v)
}

// raw embeds v, valid JSON (see embedded), or null when it is empty.
func (o *jsonOut) raw(k string, v json.RawMessage) {
	o.key(k)
	if len(v) == 0 {
		o.b = append(o.b, "null"...)
		return
	}
	if !hasJSONSpace(v) {
		o.b = append(o.b, v...) // compact already: encoding/json would copy it as it is
		return
	}
	o.marshalled(v)
}

// marshalled appends v as encoding/json writes it.
func (o *jsonOut) marshalled(v any) {
	b, err := marshal(v)
	if err != nil && o.err == nil {
		o.err = err
	}
	o.b = append(o.b, b...)
}

// head writes the fields every unit event starts with.
func (o *jsonOut) head(h wireHead) {
	o.str("type", h.Type)
	o.str("unit_id", h.UnitID)
	o.str("worker_id", h.WorkerID)
	o.int("retry_index", h.RetryIndex)
	o.int("reclaim_count", h.ReclaimCount)
	o.int("ownership_generation", h.OwnershipGeneration)
	o.int("at_ms", h.AtMS)
}

// lenOf is the length of *s, 0 for nil.
func lenOf(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}

// eventSize is room for a unit event's fixed fields and numbers; callers
// add the lengths of its strings.
func eventSize(h wireHead, more int) int {
	return 256 + len(h.UnitID) + len(h.WorkerID) + more
}

// plainASCII reports whether s stands between quotes as encoding/json
// writes it: printable ASCII without a quote or a backslash.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendJSONFloat appends f as encoding/json writes a float64: plain
// decimals from 1e-6 up to 1e21, an exponent outside that range, written
// without a leading zero (1e-07 becomes 1e-7).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// hasJSONSpace reports whether v holds a byte that encoding/json's compacting
// could remove.
func hasJSONSpace(v []byte) bool {
	for _, c := range v {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			return true
		}
	}
	return false
}
