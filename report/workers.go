package report

import (
	"encoding/json"
	"sort"
)

// Worker is one entry of the build's workers hash:
// {"last_seen":<ms>,"current_unit":<id or null>,"processed":<n>}.
type Worker struct {
	ID string
	// LastSeenMS is the worker's last sign of life (Redis server time,
	// epoch ms); idle time is measured from the latest of these.
	LastSeenMS  int64
	CurrentUnit *string
	Processed   float64
	// Raw is the record as stored, shown as is in the JSON summary.
	Raw string
}

// ParseWorkers reads the workers hash as HGETALL returns it, sorted by
// worker id so that the summary is the same for the same build. A record
// that does not read as JSON is kept (Raw) with its numbers zero: the
// workers hash informs the report, it never decides the verdict.
func ParseWorkers(fields map[string]string) []Worker {
	out := make([]Worker, 0, len(fields))
	for id, raw := range fields {
		w := Worker{ID: id, Raw: raw}
		var rec struct {
			LastSeen    float64 `json:"last_seen"`
			CurrentUnit *string `json:"current_unit"`
			Processed   float64 `json:"processed"`
		}
		if json.Unmarshal([]byte(raw), &rec) == nil {
			w.LastSeenMS, w.CurrentUnit, w.Processed = int64(rec.LastSeen), rec.CurrentUnit, rec.Processed
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// workerMap encodes workers as the summary's "workers" object: worker id ->
// record, in id order; a record that is not JSON appears as a string.
type workerMap []Worker

func (ws workerMap) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, w := range ws {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := marshalNoEscape(w.ID)
		if err != nil {
			return nil, err
		}
		b = append(append(b, k...), ':')
		if json.Valid([]byte(w.Raw)) {
			b = append(b, w.Raw...)
		} else {
			v, err := marshalNoEscape(w.Raw)
			if err != nil {
				return nil, err
			}
			b = append(b, v...)
		}
	}
	return append(b, '}'), nil
}
