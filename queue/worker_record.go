package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// workerRecord is a worker's entry in the workers hash:
// {"last_seen":<ms>,"current_unit":<id or null>,"processed":<n>}.
type workerRecord struct {
	lastSeen    int64
	currentUnit json.RawMessage // kept as stored when a transition leaves it alone
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
	var wire struct {
		LastSeen    float64         `json:"last_seen"`
		CurrentUnit json.RawMessage `json:"current_unit"`
		Processed   any             `json:"processed"`
	}
	if err := json.Unmarshal([]byte(raw), &wire); err != nil {
		return workerRecord{}, fmt.Errorf("queue: worker record %q: %w", raw, err)
	}
	rec := workerRecord{lastSeen: int64(wire.LastSeen), currentUnit: wire.CurrentUnit}
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

// touch is the reference's touch_worker: last_seen becomes now, the current
// unit changes as c says, and processed grows by delta.
func (r workerRecord) touch(now int64, c current, delta float64) []byte {
	r.lastSeen = now
	if !c.keep {
		if c.unit == "" {
			r.currentUnit = nil
		} else {
			r.currentUnit = jsonString(c.unit)
		}
	}
	r.processed += delta
	b := make([]byte, 0, 96)
	b = append(b, `{"last_seen":`...)
	b = strconv.AppendInt(b, r.lastSeen, 10)
	b = append(b, `,"current_unit":`...)
	if len(r.currentUnit) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, r.currentUnit...)
	}
	b = append(b, `,"processed":`...)
	b = strconv.AppendFloat(b, r.processed, 'f', -1, 64)
	return append(b, '}')
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimRight(buf.Bytes(), "\n")
}
