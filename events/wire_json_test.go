package events

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// wireShapes are every shape jsonOut writes, filled from one set of
// values: each must come out as marshal (encoding/json) writes it.
func wireShapes(unit, worker, text string, errs json.RawMessage, ms float64, n int64) map[string][2]func() ([]byte, error) {
	h := wireHead{Type: TypeFinalized, UnitID: unit, WorkerID: worker, RetryIndex: n, ReclaimCount: n / 2, OwnershipGeneration: n + 1, AtMS: n * 3}
	str := nullIfEmpty(text)
	fin := wireFinalized{wireHead: h, Outcome: OutcomeFailed, DurationMS: ms, Reason: str, Errors: errs, Stream: text, EntryID: "1-2"}
	pair := func(v interface{ json() ([]byte, error) }) [2]func() ([]byte, error) {
		return [2]func() ([]byte, error){v.json, func() ([]byte, error) { return marshal(v) }}
	}
	return map[string][2]func() ([]byte, error){
		"delivered":  pair(wireDelivered{h, text, "1-2", n}),
		"reclaimed":  pair(wireReclaimed{h, str, "units", text, n}),
		"requeued":   pair(wireRequeued{h, n - 1, ms, str, errs, "units", text, "3-4"}),
		"abandoned":  pair(wireAbandoned{h, ms, "units", text}),
		"finalized":  pair(fin),
		"retry":      pair(wireRetryBudgetExhausted{fin, str}),
		"reclaim":    pair(wireReclaimBudgetExhausted{fin, str, n}),
		"nil fields": pair(wireRequeued{wireHead: h}),
	}
}

func checkWireShapes(t *testing.T, unit, worker, text string, errs json.RawMessage, ms float64, n int64) {
	t.Helper()
	for name, p := range wireShapes(unit, worker, text, errs, ms, n) {
		got, gerr := p[0]()
		want, werr := p[1]()
		if (gerr != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Errorf("%s: wrote %s (%v), encoding/json writes %s (%v)", name, got, gerr, want, werr)
		}
	}
}

func TestWireJSONIsEncodingJSON(t *testing.T) {
	texts := []string{"", "spec/a_spec.rb", `a"b\c`, "tab\there", "é ünïcode", "\u2028", "<html>&", "\xff", "ctl\x01\x7f"}
	errs := []json.RawMessage{nil, json.RawMessage(`[{"class":"E","message":"m"}]`), json.RawMessage(" [ 1 ,\n2 ] "), json.RawMessage(`"<&>"`)}
	floats := []float64{0, 3, 1.5, 123456.789, 1e-7, 1e-6, 9.99e20, 1e21, 2.5e-300, -0.25, math.SmallestNonzeroFloat64}
	for _, text := range texts {
		for _, e := range errs {
			for _, f := range floats {
				checkWireShapes(t, "u/"+text, "w"+text, text, e, f, 7)
			}
		}
	}
}

func FuzzWireJSON(f *testing.F) {
	f.Add("spec/a_spec.rb", "w1", "summary", []byte(`{"a":1}`), 12.5, int64(3))
	f.Add("é", "\x00", `"\`, []byte(" [1, 2]\n"), 1e-9, int64(-1))
	f.Fuzz(func(t *testing.T, unit, worker, text string, errs []byte, ms float64, n int64) {
		if !json.Valid(errs) {
			errs = nil // embedded refuses invalid JSON before any writer sees it
		}
		if math.IsNaN(ms) || math.IsInf(ms, 0) {
			ms = 0 // checkMS refuses these before any writer sees them
		}
		checkWireShapes(t, unit, worker, text, errs, ms, n)
	})
}

func BenchmarkEncodeFinalized(b *testing.B) {
	e := Finalized{Head: Head{UnitID: "spec/models/user_spec.rb", WorkerID: "ci-7", AtMS: 1796216207011}, Outcome: OutcomePassed, DurationMS: 1234.5, Stream: "units", EntryID: "1796216207011-0"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}
