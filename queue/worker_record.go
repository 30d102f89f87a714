package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// workerRecord is a worker's entry in the workers hash:
// {"last_seen":<ms>,"current_unit":<id or null>,"processed":<n>}.
type workerRecord struct {
	lastSeen    int64
	currentUnit string // JSON text, kept as stored when a transition leaves it alone; "": null
	processed   float64
}

// current says what a transition does to a worker's current unit.
type current struct {
	keep bool   // leave it as it is
	unit string // else set it to this unit, or to null when empty
}

var (
	keepCurrent  = current{keep: true}
	clearCurrent = current{}
)

func setCurrent(unit string) current { return current{unit: unit} }

func parseWorkerRecord(raw string, found bool) (workerRecord, error) {
	if !found {
		return workerRecord{}, nil
	}
	if rec, ok := parseWorkerRecordFast(raw); ok {
		return rec, nil
	}
	// last_seen is overwritten, never read: whatever it holds is fine.
	var wire struct {
		CurrentUnit json.RawMessage `json:"current_unit"`
		Processed   any             `json:"processed"`
	}
	if err := json.Unmarshal([]byte(raw), &wire); err != nil {
		return workerRecord{}, fmt.Errorf("queue: worker record %q: %w", raw, err)
	}
	rec := workerRecord{currentUnit: string(wire.CurrentUnit)}
	switch p := wire.Processed.(type) {
	case float64:
		rec.processed = p
	case string: // a counter stored as text still counts
		if v, err := strconv.ParseFloat(p, 64); err == nil {
			rec.processed = v
		}
	}
	return rec, nil
}

// touch is what every transition does to its worker's record: last_seen
// becomes now, the current unit changes as c says, and processed grows by
// delta. Every transition writes one, so it is built in one allocation.
func (r workerRecord) touch(now int64, c current, delta float64) string {
	unit := r.currentUnit
	if !c.keep {
		unit = ""
	}
	var b strings.Builder
	b.Grow(96 + len(unit) + len(c.unit))
	var num [32]byte
	b.WriteString(`{"last_seen":`)
	b.Write(strconv.AppendInt(num[:0], now, 10))
	b.WriteString(`,"current_unit":`)
	switch {
	case !c.keep && c.unit != "":
		writeJSONString(&b, c.unit)
	case unit == "":
		b.WriteString("null")
	default:
		b.WriteString(unit)
	}
	b.WriteString(`,"processed":`)
	b.Write(strconv.AppendFloat(num[:0], r.processed+delta, 'f', -1, 64))
	b.WriteByte('}')
	return b.String()
}

// writeJSONString writes s to b as a JSON string without HTML escaping.
func writeJSONString(b *strings.Builder, s string) {
	if plainJSONString(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Write(bytes.TrimRight(buf.Bytes(), "\n"))
}

// parseWorkerRecordFast reads the exact layout touch writes (a current unit
// without escapes), without encoding/json's reflection: every transition
// reads one. Anything else goes the slow, general way.
func parseWorkerRecordFast(raw string) (workerRecord, bool) {
	var rec workerRecord
	rest, ok := strings.CutPrefix(raw, `{"last_seen":`)
	if !ok {
		return rec, false
	}
	num, rest, ok := strings.Cut(rest, `,"current_unit":`)
	if !ok {
		return rec, false
	}
	seen, err := strconv.ParseInt(num, 10, 64)
	if err != nil || !isJSONNumber(num) {
		return rec, false
	}
	rec.lastSeen = seen
	switch {
	case strings.HasPrefix(rest, "null,"):
		rest = rest[len("null,"):]
	case strings.HasPrefix(rest, `"`):
		end := strings.IndexByte(rest[1:], '"')
		if end < 0 {
			return rec, false
		}
		unit := rest[1 : end+1]
		if !plainJSONString(unit) {
			return rec, false
		}
		rec.currentUnit = rest[:end+2]
		if rest = rest[end+2:]; !strings.HasPrefix(rest, ",") {
			return rec, false
		}
		rest = rest[1:]
	default:
		return rec, false
	}
	num, ok = strings.CutPrefix(rest, `"processed":`)
	if !ok || !strings.HasSuffix(num, "}") {
		return rec, false
	}
	num = num[:len(num)-1]
	p, err := strconv.ParseFloat(num, 64)
	if err != nil || !isJSONNumber(num) {
		return rec, false
	}
	rec.processed = p
	return rec, true
}

// isJSONNumber reports whether s is a number as JSON spells one, which
// strconv is more lenient about ("00", "+1", "0x1p3", "Inf").
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	start := i
	if n := digits(); n == 0 || (n > 1 && s[start] == '0') {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// plainJSONString reports whether s can stand between quotes in JSON as it
// is: valid UTF-8, no quote, no backslash, no control character.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == '\\' || s[i] == '"' {
			return false
		}
	}
	return utf8.ValidString(s)
}
