package queue

import (
	"encoding/json"
	"testing"
)

// slowWorkerRecord is the general path alone, to hold the fast path to it.
// last_seen is read as the exact integer the fast path takes: through a
// float64 one above 2^53 would round, and the two would differ on a number
// neither path ever writes back (touch replaces it).
func slowWorkerRecord(raw string) (workerRecord, error) {
	var wire struct {
		LastSeen    json.Number     `json:"last_seen"`
		CurrentUnit json.RawMessage `json:"current_unit"`
		Processed   float64         `json:"processed"`
	}
	if err := json.Unmarshal([]byte(raw), &wire); err != nil {
		return workerRecord{}, err
	}
	seen, err := wire.LastSeen.Int64()
	return workerRecord{lastSeen: seen, currentUnit: string(wire.CurrentUnit), processed: wire.Processed}, err
}

func TestWorkerRecordTouch(t *testing.T) {
	rec, err := parseWorkerRecord(`{"last_seen":5,"current_unit":"a/b <c>","processed":2}`, true)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		c     current
		delta float64
		want  string
	}{
		{keepCurrent, 0, `{"last_seen":9,"current_unit":"a/b <c>","processed":2}`},
		{clearCurrent, 1, `{"last_seen":9,"current_unit":null,"processed":3}`},
		{setCurrent(`x"y`), 0, `{"last_seen":9,"current_unit":"x\"y","processed":2}`},
	}
	for _, c := range cases {
		if got := rec.touch(9, c.c, c.delta); got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
	fresh, _ := parseWorkerRecord("", false)
	if got, want := fresh.touch(1, keepCurrent, 0), `{"last_seen":1,"current_unit":null,"processed":0}`; got != want {
		t.Errorf("new record: got %s, want %s", got, want)
	}
}

func FuzzWorkerRecordFast(f *testing.F) {
	for _, seed := range []string{
		`{"last_seen":1796216207011,"current_unit":"spec/a_spec.rb","processed":12}`,
		`{"last_seen":0,"current_unit":null,"processed":0}`,
		`{"last_seen":1,"current_unit":"a\"b","processed":1.5}`,
		`{"processed":1,"last_seen":2,"current_unit":null}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fast, ok := parseWorkerRecordFast(raw)
		if !ok {
			return
		}
		slow, err := slowWorkerRecord(raw)
		if err != nil {
			t.Fatalf("fast path read %q, which is not a valid record: %v", raw, err)
		}
		if slow.currentUnit == "null" {
			slow.currentUnit = "" // both write null
		}
		if fast.lastSeen != slow.lastSeen || fast.processed != slow.processed || fast.currentUnit != slow.currentUnit {
			t.Fatalf("%q: fast %+v, slow %+v", raw, fast, slow)
		}
	})
}
