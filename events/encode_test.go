package events_test

import (
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
)

// encoder is what every event type in the package offers.
type encoder interface {
	Encode() ([]byte, error)
}

// encode returns e's bytes, failing the test on error.
func encode(t testing.TB, e encoder) string {
	t.Helper()
	b, err := e.Encode()
	require.NoErrorf(t, err, "Encode() of %#v", e)
	return string(b)
}

// requireBytes compares produced JSON with the hand-written expectation.
func requireBytes(t testing.TB, got, want string) {
	t.Helper()
	require.Equalf(t, want, got, "got  %s\nwant %s", got, want)
}

// The head shared by most cases: retry 1 + reclaim 2 -> ownership generation 4.
var head = events.Head{UnitID: "./spec/a_spec.rb", WorkerID: "ci-7.2", RetryIndex: 1, ReclaimCount: 2, AtMS: 1733143440123}

const headJSON = `"unit_id":"./spec/a_spec.rb","worker_id":"ci-7.2","retry_index":1,"reclaim_count":2,"ownership_generation":4,"at_ms":1733143440123`

const payload = `[{"example_id":"./spec/a_spec.rb[1:1]","description":"a <b> & c","class":"RuntimeError","message":"boom","backtrace":["./spec/a_spec.rb:3"]}]`

func TestEncodeUnitScopedEvents(t *testing.T) {
	tests := []struct {
		name  string
		event encoder
		want  string
	}{
		{
			name: "delivered, first ownership",
			event: events.Delivered{
				Head:   events.Head{UnitID: "./spec/a_spec.rb", WorkerID: "w-1", AtMS: 1733143440123},
				Stream: "units", EntryID: "1733143440000-0", DeliveryCount: 1,
			},
			want: `{"type":"delivered","unit_id":"./spec/a_spec.rb","worker_id":"w-1","retry_index":0,"reclaim_count":0,"ownership_generation":1,"at_ms":1733143440123,"stream":"units","entry_id":"1733143440000-0","delivery_count":1}`,
		},
		{
			name:  "delivered from the priority stream",
			event: events.Delivered{Head: head, Stream: "units:priority", EntryID: "1733143440001-3", DeliveryCount: 2},
			want:  `{"type":"delivered",` + headJSON + `,"stream":"units:priority","entry_id":"1733143440001-3","delivery_count":2}`,
		},
		{
			name: "HTML characters and non-ASCII stay literal",
			event: events.Delivered{
				Head:   events.Head{UnitID: "./spec/<ünï>&code_spec.rb", WorkerID: "w&1", AtMS: 5},
				Stream: "units", EntryID: "1-0", DeliveryCount: 1,
			},
			want: `{"type":"delivered","unit_id":"./spec/<ünï>&code_spec.rb","worker_id":"w&1","retry_index":0,"reclaim_count":0,"ownership_generation":1,"at_ms":5,"stream":"units","entry_id":"1-0","delivery_count":1}`,
		},
		{
			name:  "reclaimed from a known owner",
			event: events.Reclaimed{Head: head, PreviousWorkerID: "ci-3.1", Stream: "units", EntryID: "1-0", DeliveryCount: 4},
			want:  `{"type":"reclaimed",` + headJSON + `,"previous_worker_id":"ci-3.1","stream":"units","entry_id":"1-0","delivery_count":4}`,
		},
		{
			name:  "reclaimed, owner unknown is null",
			event: events.Reclaimed{Head: head, Stream: "units:priority", EntryID: "1-0", DeliveryCount: 2},
			want:  `{"type":"reclaimed",` + headJSON + `,"previous_worker_id":null,"stream":"units:priority","entry_id":"1-0","delivery_count":2}`,
		},
		{
			name: "requeued with summary and errors embedded",
			event: events.Requeued{
				Head: head, DurationMS: 1500, FailureSummary: "1 failure: a <b> & c",
				Errors: json.RawMessage(payload), Stream: "units", EntryID: "1-0", NewEntryID: "2-0",
			},
			want: `{"type":"requeued",` + headJSON + `,"previous_retry_index":0,"duration_ms":1500,"failure_summary":"1 failure: a <b> & c","errors":` + payload + `,"stream":"units","entry_id":"1-0","new_entry_id":"2-0"}`,
		},
		{
			name:  "requeued, empty summary and errors are null, fractional duration",
			event: events.Requeued{Head: head, DurationMS: 1.5, Stream: "units:priority", EntryID: "1-0", NewEntryID: "2-0"},
			want:  `{"type":"requeued",` + headJSON + `,"previous_retry_index":0,"duration_ms":1.5,"failure_summary":null,"errors":null,"stream":"units:priority","entry_id":"1-0","new_entry_id":"2-0"}`,
		},
		{
			name: "requeued, errors JSON compacted, any JSON value",
			event: events.Requeued{
				Head: events.Head{UnitID: "u", WorkerID: "w", RetryIndex: 3, AtMS: 9}, DurationMS: 20,
				Errors: json.RawMessage(" {\"k\" : [ 1, null, \"<&>\" ] }\n"), Stream: "units", EntryID: "1-0", NewEntryID: "2-0",
			},
			want: `{"type":"requeued","unit_id":"u","worker_id":"w","retry_index":3,"reclaim_count":0,"ownership_generation":4,"at_ms":9,"previous_retry_index":2,"duration_ms":20,"failure_summary":null,"errors":{"k":[1,null,"<&>"]},"stream":"units","entry_id":"1-0","new_entry_id":"2-0"}`,
		},
		{
			name:  "abandoned, integral elapsed",
			event: events.Abandoned{Head: head, ElapsedMS: 900000, Stream: "units", EntryID: "1-0"},
			want:  `{"type":"abandoned",` + headJSON + `,"elapsed_ms":900000,"stream":"units","entry_id":"1-0"}`,
		},
		{
			name:  "abandoned, fractional elapsed",
			event: events.Abandoned{Head: head, ElapsedMS: 900000.25, Stream: "units", EntryID: "1-0"},
			want:  `{"type":"abandoned",` + headJSON + `,"elapsed_ms":900000.25,"stream":"units","entry_id":"1-0"}`,
		},
		{
			name:  "finalized passed: reason and errors null",
			event: events.Finalized{Head: head, Outcome: events.OutcomePassed, DurationMS: 0, Stream: "units", EntryID: "1-0"},
			want:  `{"type":"finalized",` + headJSON + `,"outcome":"passed","duration_ms":0,"reason":null,"errors":null,"stream":"units","entry_id":"1-0"}`,
		},
		{
			name: "finalized failed with reason and errors",
			event: events.Finalized{
				Head: head, Outcome: events.OutcomeFailed, DurationMS: 12.75, Reason: events.ReasonTestFailure,
				Errors: json.RawMessage(payload), Stream: "units:priority", EntryID: "3-1",
			},
			want: `{"type":"finalized",` + headJSON + `,"outcome":"failed","duration_ms":12.75,"reason":"test_failure","errors":` + payload + `,"stream":"units:priority","entry_id":"3-1"}`,
		},
		{
			name:  "finalized, a large integral duration has no exponent",
			event: events.Finalized{Head: head, Outcome: events.OutcomePassed, DurationMS: 1e20, Stream: "units", EntryID: "1-0"},
			want:  `{"type":"finalized",` + headJSON + `,"outcome":"passed","duration_ms":100000000000000000000,"reason":null,"errors":null,"stream":"units","entry_id":"1-0"}`,
		},
		{
			name: "retry budget exhausted with summary",
			event: events.RetryBudgetExhausted{
				Head: head, DurationMS: 2500, Errors: json.RawMessage(payload),
				Stream: "units:priority", EntryID: "4-0", FailureSummary: "1 failure",
			},
			want: `{"type":"finalized",` + headJSON + `,"outcome":"failed","duration_ms":2500,"reason":"retry_budget_exhausted","errors":` + payload + `,"stream":"units:priority","entry_id":"4-0","failure_summary":"1 failure"}`,
		},
		{
			name:  "retry budget exhausted, empty summary and errors are null",
			event: events.RetryBudgetExhausted{Head: head, DurationMS: 0.5, Stream: "units", EntryID: "4-0"},
			want:  `{"type":"finalized",` + headJSON + `,"outcome":"failed","duration_ms":0.5,"reason":"retry_budget_exhausted","errors":null,"stream":"units","entry_id":"4-0","failure_summary":null}`,
		},
		{
			name:  "reclaim budget exhausted from a known owner",
			event: events.ReclaimBudgetExhausted{Head: head, Stream: "units", EntryID: "5-0", PreviousWorkerID: "ci-3.1", DeliveryCount: 4},
			want:  `{"type":"finalized",` + headJSON + `,"outcome":"failed","duration_ms":0,"reason":"reclaim_budget_exhausted","errors":null,"stream":"units","entry_id":"5-0","previous_worker_id":"ci-3.1","delivery_count":4}`,
		},
		{
			name:  "reclaim budget exhausted, owner unknown is null",
			event: events.ReclaimBudgetExhausted{Head: head, Stream: "units:priority", EntryID: "5-0", DeliveryCount: 4},
			want:  `{"type":"finalized",` + headJSON + `,"outcome":"failed","duration_ms":0,"reason":"reclaim_budget_exhausted","errors":null,"stream":"units:priority","entry_id":"5-0","previous_worker_id":null,"delivery_count":4}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := encode(t, tc.event)
			requireBytes(t, got, tc.want)
			require.Truef(t, json.Valid([]byte(got)), "got invalid JSON %s", got)
		})
	}
}

func TestEncodeRefusesWhatTheLogMustNotHold(t *testing.T) {
	tests := []struct {
		name    string
		event   encoder
		wantErr error
		mention string // the detail the error must carry
	}{
		{"requeued with invalid errors JSON", events.Requeued{Head: head, Errors: json.RawMessage(`[{"a":`)}, events.ErrInvalidJSON, "./spec/a_spec.rb"},
		{"requeued with whitespace-only errors", events.Requeued{Head: head, Errors: json.RawMessage("  ")}, events.ErrInvalidJSON, "requeued"},
		{"finalized with invalid errors JSON", events.Finalized{Head: head, Outcome: events.OutcomeFailed, Errors: json.RawMessage(`{'a':1}`)}, events.ErrInvalidJSON, "invalid character"},
		{"retry exhausted with two JSON values", events.RetryBudgetExhausted{Head: head, Errors: json.RawMessage(`[] []`)}, events.ErrInvalidJSON, "finalized"},
		{"finalized with an unknown outcome", events.Finalized{Head: head, Outcome: "pass"}, events.ErrInvalidEvent, `"pass"`},
		{"finalized with NaN duration", events.Finalized{Head: head, Outcome: events.OutcomePassed, DurationMS: math.NaN()}, events.ErrInvalidEvent, "duration_ms NaN"},
		{"requeued with infinite duration", events.Requeued{Head: head, DurationMS: math.Inf(1)}, events.ErrInvalidEvent, "duration_ms +Inf"},
		{"abandoned with an elapsed printed with an exponent", events.Abandoned{Head: head, ElapsedMS: 1e21}, events.ErrInvalidEvent, "elapsed_ms"},
		{"requeued at retry index 0", events.Requeued{Head: events.Head{UnitID: "u", WorkerID: "w"}}, events.ErrInvalidEvent, "retry_index 0"},
		{"negative retry index", events.Delivered{Head: events.Head{UnitID: "u", WorkerID: "w", RetryIndex: -1}}, events.ErrInvalidEvent, "retry_index -1"},
		{"negative reclaim count", events.Reclaimed{Head: events.Head{UnitID: "u", WorkerID: "w", ReclaimCount: -2}}, events.ErrInvalidEvent, "reclaim_count -2"},
		{"ownership generation overflow", events.Delivered{Head: events.Head{UnitID: "u", WorkerID: "w", RetryIndex: math.MaxInt64 - 1, ReclaimCount: 1}}, events.ErrInvalidEvent, "overflows"},
		{"no unit id", events.Abandoned{Head: events.Head{WorkerID: "w"}}, events.ErrInvalidEvent, "no unit id"},
		{"no worker id", events.ReclaimBudgetExhausted{Head: events.Head{UnitID: "u"}}, events.ErrInvalidEvent, "no worker id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.event.Encode()
			require.ErrorIsf(t, err, tc.wantErr, "got error %v, want %v", err, tc.wantErr)
			require.Containsf(t, err.Error(), tc.mention, "got error %q, want it to mention %q", err, tc.mention)
			require.Nilf(t, got, "got %s alongside an error, want nothing", got)
		})
	}
}

func TestOwnershipGeneration(t *testing.T) {
	got := events.Head{RetryIndex: 2, ReclaimCount: 3}.OwnershipGeneration()
	require.Equalf(t, int64(6), got, "got %d, want 6", got)
}

func TestEncodeIsSafeForConcurrentUse(t *testing.T) {
	event := events.Requeued{Head: head, DurationMS: 1, Errors: json.RawMessage(payload), Stream: "units", EntryID: "1-0", NewEntryID: "2-0"}
	want := encode(t, event)
	var wg sync.WaitGroup
	results := make([]string, 16)
	for i := range results {
		wg.Go(func() {
			b, _ := event.Encode()
			results[i] = string(b)
		})
	}
	wg.Wait()
	for _, got := range results {
		requireBytes(t, got, want)
	}
	require.Falsef(t, strings.Contains(want, `\u003c`), "got HTML-escaped %s", want)
}

func BenchmarkFinalizedEncode(b *testing.B) {
	event := events.Finalized{
		Head: head, Outcome: events.OutcomeFailed, DurationMS: 1234.5, Reason: events.ReasonTestFailure,
		Errors: json.RawMessage(payload), Stream: "units", EntryID: "1733143440000-0",
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := event.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeliveredEncode(b *testing.B) {
	event := events.Delivered{Head: head, Stream: "units", EntryID: "1733143440000-0", DeliveryCount: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := event.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}
