package budget_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/hopper-queue/hopper/budget"
)

func TestMaxRequeuedUnits(t *testing.T) {
	cases := []struct {
		total     int64
		tolerance float64
		want      int64
	}{
		{100, 0.7, 70}, // not 71: 100 × 0.7 is 70.00000000000001 in binary
		{100, 0, 0},
		{100, 1, 100},
		{0, 0.5, 0},
		{0, 1, 0},
		{3, 0.5, 2},
		{10, 0.1, 1},
		{7, 0.3, 3},
		{1, 0.0001, 1},
		{100, -0.5, 0},
		{100, math.NaN(), 0},
	}
	for _, c := range cases {
		if got := budget.MaxRequeuedUnits(c.total, c.tolerance); got != c.want {
			t.Errorf("MaxRequeuedUnits(%d, %v): got %d, want %d", c.total, c.tolerance, got, c.want)
		}
	}
}

func TestDecideRequeue(t *testing.T) {
	fresh := budget.State{}
	inRetry := budget.State{RetryIndex: 1, EnteredRetry: true}
	cases := []struct {
		name  string
		state budget.State
		r     budget.Requeue
		want  budget.RequeueDecision
	}{
		{"cap 0 never requeues", fresh, budget.Requeue{MaxRequeues: 0, Tolerance: 1, TotalUnits: 10}, budget.RequeueDecision{}},
		{"first retry within cap and tolerance", fresh, budget.Requeue{MaxRequeues: 1, Tolerance: 1, TotalUnits: 10}, budget.RequeueDecision{Requeue: true, EntersRetry: true}},
		{"tolerance 0 stops a fresh unit", fresh, budget.Requeue{MaxRequeues: 3, Tolerance: 0, TotalUnits: 10}, budget.RequeueDecision{}},
		{"tolerance full", fresh, budget.Requeue{MaxRequeues: 3, Tolerance: 0.7, TotalUnits: 100, RequeuedUnits: 70}, budget.RequeueDecision{}},
		{"tolerance one left", fresh, budget.Requeue{MaxRequeues: 3, Tolerance: 0.7, TotalUnits: 100, RequeuedUnits: 69}, budget.RequeueDecision{Requeue: true, EntersRetry: true}},
		{"unit in retry ignores tolerance", inRetry, budget.Requeue{MaxRequeues: 3, Tolerance: 0, TotalUnits: 10, RequeuedUnits: 5}, budget.RequeueDecision{Requeue: true}},
		{"unit in retry at its cap", inRetry, budget.Requeue{MaxRequeues: 1, Tolerance: 1, TotalUnits: 10}, budget.RequeueDecision{}},
		{"total 0", fresh, budget.Requeue{MaxRequeues: 3, Tolerance: 1, TotalUnits: 0}, budget.RequeueDecision{}},
		{"reclaims do not spend retries", budget.State{ReclaimCount: 5}, budget.Requeue{MaxRequeues: 1, Tolerance: 1, TotalUnits: 1}, budget.RequeueDecision{Requeue: true, EntersRetry: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := budget.DecideRequeue(c.state, c.r); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestRequeueAfter(t *testing.T) {
	s := budget.State{RetryIndex: 0, ReclaimCount: 2}
	got := budget.RequeueDecision{Requeue: true, EntersRetry: true}.After(s)
	want := budget.State{RetryIndex: 1, ReclaimCount: 2, EnteredRetry: true}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := (budget.RequeueDecision{}).After(s); got != s {
		t.Fatalf("a refused requeue changed the state: got %+v, want %+v", got, s)
	}
	if g := want.OwnershipGeneration(); g != 4 {
		t.Fatalf("ownership generation: got %d, want 4", g)
	}
}

func TestReclaimExhausted(t *testing.T) {
	cases := []struct {
		count int64
		max   float64
		want  bool
	}{
		{0, 0, true},
		{0, 1, false},
		{2, 3, false},
		{3, 3, true},
	}
	for _, c := range cases {
		if got := budget.ReclaimExhausted(budget.State{ReclaimCount: c.count}, c.max); got != c.want {
			t.Errorf("count %d max %v: got %v, want %v", c.count, c.max, got, c.want)
		}
	}
}

func TestFrozen(t *testing.T) {
	cases := []struct {
		meta     string
		present  bool
		fallback float64
		want     float64
	}{
		{"3", true, 1, 3},
		{"0", true, 5, 0},
		{"0.7", true, 0, 0.7},
		{" 2 ", true, 0, 2},
		{"", false, 4, 4},
		{"abc", true, 4, 4},
		{"NaN", true, 4, 4},
		{"inf", true, 4, 4},
	}
	for _, c := range cases {
		if got := budget.Frozen(c.meta, c.present, c.fallback); got != c.want {
			t.Errorf("Frozen(%q, %v, %v): got %v, want %v", c.meta, c.present, c.fallback, got, c.want)
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	s := budget.State{RetryIndex: 2, ReclaimCount: 1, EnteredRetry: true}
	if got, want := string(s.Encode()), `{"retry_index":2,"reclaim_count":1,"entered_retry":true}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	back, err := budget.DecodeState(s.Encode())
	if err != nil || back != s {
		t.Fatalf("got %+v, %v, want %+v", back, err, s)
	}
	if _, err := budget.DecodeState([]byte(`{"retry_index":1}`)); err == nil {
		t.Fatal("a state without reclaim_count decoded without error")
	}
	if _, err := budget.DecodeState([]byte(`not json`)); err == nil {
		t.Fatal("garbage decoded without error")
	}
	if got, err := budget.DecodeState([]byte(`{"retry_index":0,"reclaim_count":0}`)); err != nil || got.EnteredRetry {
		t.Fatalf("missing entered_retry: got %+v, %v", got, err)
	}
}

func FuzzMaxRequeuedUnits(f *testing.F) {
	f.Add(int64(100), 0.7)
	f.Add(int64(0), 1.0)
	f.Add(int64(3), 0.5)
	f.Fuzz(func(t *testing.T, total int64, tolerance float64) {
		if total < 0 || total > 1<<40 || tolerance < 0 || tolerance > 1 || math.IsNaN(tolerance) {
			return
		}
		got := budget.MaxRequeuedUnits(total, tolerance)
		if got < 0 || got > total {
			t.Fatalf("MaxRequeuedUnits(%d, %v) = %d, outside 0..%d", total, tolerance, got, total)
		}
		// Never fewer than the exact product rounded down: rounding errs up only by the nudge.
		if float64(got) < math.Floor(float64(total)*tolerance)-1 {
			t.Fatalf("MaxRequeuedUnits(%d, %v) = %d, too small", total, tolerance, got)
		}
	})
}

func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"retry_index":1,"reclaim_count":2,"entered_retry":true}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := budget.DecodeState(raw)
		if err != nil {
			return
		}
		back, err := budget.DecodeState(s.Encode())
		if err != nil || back != s {
			t.Fatalf("round trip of %q: got %+v, %v, want %+v", raw, back, err, s)
		}
	})
}

func FuzzDecodeStateFastAgrees(f *testing.F) {
	f.Add([]byte(`{"retry_index":1,"reclaim_count":2,"entered_retry":true}`))
	f.Add([]byte(`{"retry_index":01,"reclaim_count":2,"entered_retry":false}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var wire struct {
			RetryIndex   *float64 `json:"retry_index"`
			ReclaimCount *float64 `json:"reclaim_count"`
			EnteredRetry *bool    `json:"entered_retry"`
		}
		s, err := budget.DecodeState(raw)
		if json.Unmarshal(raw, &wire) != nil || wire.RetryIndex == nil || wire.ReclaimCount == nil {
			if err == nil && !bytes.Equal(raw, s.Encode()) {
				t.Fatalf("%q decoded to %+v though it is not a valid state", raw, s)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if s.RetryIndex != int64(*wire.RetryIndex) || s.ReclaimCount != int64(*wire.ReclaimCount) {
			t.Fatalf("%q: got %+v", raw, s)
		}
	})
}
