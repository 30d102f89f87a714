package events_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
)

func ptr(s string) *string { return &s }

func TestDecodeEveryEventType(t *testing.T) {
	headEvent := func(typ string) events.Event {
		return events.Event{
			Type: typ, UnitID: ptr("./spec/a_spec.rb"), WorkerID: "ci-7.2",
			RetryIndex: 1, ReclaimCount: 2, OwnershipGeneration: 4, AtMS: 1733143440123,
		}
	}
	with := func(e events.Event, set func(*events.Event)) events.Event {
		set(&e)
		return e
	}
	tests := []struct {
		name string
		raw  string
		want events.Event
	}{
		{
			name: "delivered",
			raw:  `{"type":"delivered",` + headJSON + `,"stream":"units","entry_id":"1-0","delivery_count":3}`,
			want: with(headEvent(events.TypeDelivered), func(e *events.Event) {
				e.Stream, e.EntryID, e.DeliveryCount = "units", "1-0", 3
			}),
		},
		{
			name: "reclaimed, previous owner null",
			raw:  `{"type":"reclaimed",` + headJSON + `,"previous_worker_id":null,"stream":"units","entry_id":"1-0","delivery_count":2}`,
			want: with(headEvent(events.TypeReclaimed), func(e *events.Event) {
				e.Stream, e.EntryID, e.DeliveryCount = "units", "1-0", 2
			}),
		},
		{
			name: "requeued",
			raw:  `{"type":"requeued",` + headJSON + `,"previous_retry_index":0,"duration_ms":1.5,"failure_summary":"1 failure","errors":` + payload + `,"stream":"units","entry_id":"1-0","new_entry_id":"2-0"}`,
			want: with(headEvent(events.TypeRequeued), func(e *events.Event) {
				e.PreviousRetryIndex, e.DurationMS, e.FailureSummary = 0, 1.5, ptr("1 failure")
				e.Errors, e.Stream, e.EntryID, e.NewEntryID = json.RawMessage(payload), "units", "1-0", "2-0"
			}),
		},
		{
			name: "abandoned",
			raw:  `{"type":"abandoned",` + headJSON + `,"elapsed_ms":900000,"stream":"units:priority","entry_id":"1-0"}`,
			want: with(headEvent(events.TypeAbandoned), func(e *events.Event) {
				e.ElapsedMS, e.Stream, e.EntryID = 900000, "units:priority", "1-0"
			}),
		},
		{
			name: "finalized passed, nulls",
			raw:  `{"type":"finalized",` + headJSON + `,"outcome":"passed","duration_ms":1500,"reason":null,"errors":null,"stream":"units","entry_id":"1-0"}`,
			want: with(headEvent(events.TypeFinalized), func(e *events.Event) {
				e.Outcome, e.DurationMS, e.Stream, e.EntryID = "passed", 1500, "units", "1-0"
			}),
		},
		{
			name: "finalized, retry budget exhausted",
			raw:  `{"type":"finalized",` + headJSON + `,"outcome":"failed","duration_ms":2500,"reason":"retry_budget_exhausted","errors":[],"stream":"units","entry_id":"1-0","failure_summary":null}`,
			want: with(headEvent(events.TypeFinalized), func(e *events.Event) {
				e.Outcome, e.DurationMS, e.Reason = "failed", 2500, ptr(events.ReasonRetryBudgetExhausted)
				e.Errors, e.Stream, e.EntryID = json.RawMessage(`[]`), "units", "1-0"
			}),
		},
		{
			name: "finalized, reclaim budget exhausted",
			raw:  `{"type":"finalized",` + headJSON + `,"outcome":"failed","duration_ms":0,"reason":"reclaim_budget_exhausted","errors":null,"stream":"units","entry_id":"1-0","previous_worker_id":"ci-3.1","delivery_count":4}`,
			want: with(headEvent(events.TypeFinalized), func(e *events.Event) {
				e.Outcome, e.Reason, e.Stream, e.EntryID = "failed", ptr(events.ReasonReclaimBudgetExhausted), "units", "1-0"
				e.PreviousWorkerID, e.DeliveryCount = ptr("ci-3.1"), 4
			}),
		},
		{
			name: "worker_error outside any unit",
			raw:  `{"type":"worker_error","worker_id":"w","phase":"boot","unit_id":null,"class":"E","message":"<m>","backtrace":["a:1"],"at_ms":7}`,
			want: events.Event{Type: events.TypeWorkerError, WorkerID: "w", Phase: "boot", Class: "E", Message: "<m>", Backtrace: []string{"a:1"}, AtMS: 7},
		},
		{
			name: "stale_rejected",
			raw:  `{"type":"stale_rejected","unit_id":"u","worker_id":"w","retry_index":0,"reclaim_count":1,"ownership_generation":2,"operation":"heartbeat","stream":"units","entry_id":"1-0","delivery_count":2,"at_ms":7}`,
			want: events.Event{
				Type: events.TypeStaleRejected, UnitID: ptr("u"), WorkerID: "w", ReclaimCount: 1, OwnershipGeneration: 2,
				Operation: "heartbeat", Stream: "units", EntryID: "1-0", DeliveryCount: 2, AtMS: 7,
			},
		},
		{
			name: "unknown type keeps only type and raw",
			raw:  `{"type":"paused","unit_id":5,"why":{"x":[1]}}`,
			want: events.Event{Type: "paused"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := events.Decode([]byte(tc.raw))
			require.NoError(t, err)
			tc.want.Raw = json.RawMessage(tc.raw)
			require.Equalf(t, tc.want, got, "got %+v, want %+v", got, tc.want)
		})
	}
}

func TestDecodeReadsWhatEncodeWrites(t *testing.T) {
	b := encode(t, events.Requeued{
		Head: head, DurationMS: 1500, FailureSummary: "s", Errors: json.RawMessage(payload),
		Stream: "units", EntryID: "1-0", NewEntryID: "2-0",
	})
	got, err := events.Decode([]byte(b))
	require.NoError(t, err)
	require.Equal(t, head.UnitID, *got.UnitID)
	require.Equal(t, head.OwnershipGeneration(), got.OwnershipGeneration)
	require.Equal(t, int64(0), got.PreviousRetryIndex)
	require.JSONEq(t, payload, string(got.Errors))
	require.True(t, got.UnitScoped())
}

func TestDecodeRawIsACopy(t *testing.T) {
	raw := []byte(`{"type":"delivered","unit_id":"u"}`)
	got, err := events.Decode(raw)
	require.NoError(t, err)
	copy(raw, "XXXXXXXX")
	require.Equalf(t, `{"type":"delivered","unit_id":"u"}`, string(got.Raw), "got Raw %s after the caller reused its buffer", got.Raw)
}

func TestDecodeRefusesMalformedEntries(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		mention string
	}{
		{"empty", ``, "unexpected end"},
		{"not JSON", `type=delivered`, "invalid character"},
		{"truncated", `{"type":"delivered"`, "unexpected end"},
		{"array", `[{"type":"delivered"}]`, "array"},
		{"null", `null`, "null"},
		{"no type", `{"unit_id":"u"}`, "no type"},
		{"null type", `{"type":null}`, "no type"},
		{"empty type", `{"type":""}`, "no type"},
		{"type not a string", `{"type":5}`, "type"},
		{"known type with a field of the wrong kind", `{"type":"delivered","retry_index":"1"}`, "retry_index"},
		{"fractional count", `{"type":"finalized","delivery_count":1.5}`, "delivery_count"},
		{"backtrace not an array", `{"type":"worker_error","backtrace":"a"}`, "backtrace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := events.Decode([]byte(tc.raw))
			require.ErrorIsf(t, err, events.ErrMalformedEvent, "got error %v, want %v", err, events.ErrMalformedEvent)
			require.Containsf(t, err.Error(), tc.mention, "got error %q, want it to mention %q", err, tc.mention)
			require.Zerof(t, got, "got %+v alongside an error, want the zero Event", got)
		})
	}
}

func TestUnitScoped(t *testing.T) {
	tests := []struct {
		event events.Event
		want  bool
	}{
		{events.Event{Type: events.TypeFinalized, UnitID: ptr("u")}, true},
		{events.Event{Type: events.TypeStaleRejected, UnitID: ptr("u")}, true},
		{events.Event{Type: events.TypeDelivered}, false},
		{events.Event{Type: events.TypeWorkerError, UnitID: ptr("u")}, false},
		{events.Event{Type: "paused", UnitID: ptr("u")}, false},
	}
	for _, tc := range tests {
		got := tc.event.UnitScoped()
		require.Equalf(t, tc.want, got, "UnitScoped() of %s: got %v, want %v", tc.event.Type, got, tc.want)
	}
}
