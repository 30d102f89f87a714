package events_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
)

func TestStampPrebuilt(t *testing.T) {
	tests := []struct {
		name  string
		event string
		atMS  int64
		want  string
	}{
		{"worker error", `{"type":"worker_error","worker_id":"w"}`, 1733143440123, `{"type":"worker_error","worker_id":"w","at_ms":1733143440123}`},
		{"empty object takes no comma", `{}`, 5, `{"at_ms":5}`},
		{"empty object with inner whitespace kept verbatim", "{ \n }", 5, "{ \n \"at_ms\":5}"},
		{"surrounding whitespace trimmed", " \t\n{\"a\":1}\r\n ", 5, `{"a":1,"at_ms":5}`},
		{"inner whitespace kept verbatim", `{ "a" : 1 }`, 5, `{ "a" : 1 ,"at_ms":5}`},
		{"nested empty object is not an empty object", `{"a":{}}`, 5, `{"a":{},"at_ms":5}`},
		{"bytes never re-encoded", `{"m":"<&>\u003c","n":1.50}`, 5, `{"m":"<&>\u003c","n":1.50,"at_ms":5}`},
		{"negative at_ms", `{"a":1}`, -7, `{"a":1,"at_ms":-7}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := events.StampPrebuilt([]byte(tc.event), tc.atMS)
			require.NoError(t, err)
			requireBytes(t, string(b), tc.want)
		})
	}
}

func TestStampPrebuiltRefusesNonObjects(t *testing.T) {
	tests := []struct {
		name    string
		event   string
		wantErr error
		mention string
	}{
		{"empty", ``, events.ErrInvalidJSON, "unexpected end of JSON input"},
		{"whitespace only", " \n ", events.ErrInvalidJSON, "unexpected end of JSON input"},
		{"invalid JSON", `{"a":`, events.ErrInvalidJSON, "unexpected end"},
		{"two objects", `{} {}`, events.ErrInvalidJSON, "invalid character"},
		{"trailing brace", `{"a":1}}`, events.ErrInvalidJSON, "invalid character"},
		{"array", `[{"a":1}]`, events.ErrNotObject, "array"},
		{"empty array", `[]`, events.ErrNotObject, "array"},
		{"string", `"{}"`, events.ErrNotObject, "string"},
		{"null", `null`, events.ErrNotObject, "null"},
		{"number", `5`, events.ErrNotObject, "number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := events.StampPrebuilt([]byte(tc.event), 5)
			require.ErrorIsf(t, err, tc.wantErr, "got error %v, want %v", err, tc.wantErr)
			require.Containsf(t, err.Error(), tc.mention, "got error %q, want it to mention %q", err, tc.mention)
			require.Nilf(t, got, "got %s alongside an error, want nothing", got)
		})
	}
}

func TestWorkerErrorEncode(t *testing.T) {
	tests := []struct {
		name  string
		event events.WorkerError
		want  string
	}{
		{
			name: "outside any unit: unit_id null, nil backtrace is []",
			event: events.WorkerError{
				WorkerID: "ci-7.2", Phase: events.PhaseInit, Class: "FingerprintMismatch", Message: "suite differs: <units> & <command>",
			},
			want: `{"type":"worker_error","worker_id":"ci-7.2","phase":"init","unit_id":null,"class":"FingerprintMismatch","message":"suite differs: <units> & <command>","backtrace":[]}`,
		},
		{
			name: "during a unit",
			event: events.WorkerError{
				WorkerID: "ci-7.2", Phase: events.PhaseRedis, UnitID: "./spec/a_spec.rb", Class: "*queue.CorruptError",
				Message: "unit_state missing", Backtrace: []string{"queue/queue.go:10", "cmd/hopper/work.go:20"},
			},
			want: `{"type":"worker_error","worker_id":"ci-7.2","phase":"redis","unit_id":"./spec/a_spec.rb","class":"*queue.CorruptError","message":"unit_state missing","backtrace":["queue/queue.go:10","cmd/hopper/work.go:20"]}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireBytes(t, encode(t, tc.event), tc.want)
		})
	}
}

func TestWorkerErrorCapsMessageAndBacktrace(t *testing.T) {
	lines := make([]string, 25)
	for i := range lines {
		lines[i] = "frame"
	}
	b, err := events.WorkerError{
		WorkerID: "w", Phase: events.PhaseExecution, Class: "E",
		Message: strings.Repeat("é", 3000), Backtrace: lines,
	}.Encode()
	require.NoError(t, err)
	got, err := events.Decode(b)
	require.NoError(t, err)
	// 4093 is odd, inside a two-byte rune: the cut backs up to 4092.
	wantMessage := strings.Repeat("é", 2046) + "..."
	require.Equalf(t, wantMessage, got.Message, "got message of %d bytes, want %d", len(got.Message), len(wantMessage))
	require.Lenf(t, got.Backtrace, events.MaxBacktraceLines, "got %d lines, want %d", len(got.Backtrace), events.MaxBacktraceLines)
}

func TestWorkerErrorRefusesUnknownPhase(t *testing.T) {
	got, err := events.WorkerError{WorkerID: "w", Phase: "shutdown"}.Encode()
	require.ErrorIs(t, err, events.ErrInvalidEvent)
	require.Containsf(t, err.Error(), `"shutdown"`, "got error %q, want it to name the phase", err)
	require.Nil(t, got)

	_, err = events.WorkerError{Phase: events.PhaseBoot}.Encode()
	require.ErrorIs(t, err, events.ErrInvalidEvent)
}

func TestStaleRejectedEncode(t *testing.T) {
	event := events.StaleRejected{
		UnitID: "./spec/a_spec.rb", WorkerID: "ci-7.2", RetryIndex: 1, ReclaimCount: 0,
		Operation: events.OperationFinalize, Stream: "units:priority", EntryID: "2-0", DeliveryCount: 1,
	}
	want := `{"type":"stale_rejected","unit_id":"./spec/a_spec.rb","worker_id":"ci-7.2","retry_index":1,"reclaim_count":0,"ownership_generation":2,"operation":"finalize","stream":"units:priority","entry_id":"2-0","delivery_count":1}`
	requireBytes(t, encode(t, event), want)

	event.Operation = "settle"
	got, err := event.Encode()
	require.ErrorIs(t, err, events.ErrInvalidEvent)
	require.Containsf(t, err.Error(), `"settle"`, "got error %q, want it to name the operation", err)
	require.Nil(t, got)
}

func TestPrebuiltThroughTheLog(t *testing.T) {
	b := encode(t, events.StaleRejected{
		UnitID: "u", WorkerID: "w", RetryIndex: 0, ReclaimCount: 1,
		Operation: events.OperationRequeue, Stream: "units", EntryID: "1-0", DeliveryCount: 2,
	})
	stamped, err := events.StampPrebuilt([]byte(b), 1733143440123)
	require.NoError(t, err)
	requireBytes(t, string(stamped), `{"type":"stale_rejected","unit_id":"u","worker_id":"w","retry_index":0,"reclaim_count":1,"ownership_generation":2,"operation":"requeue","stream":"units","entry_id":"1-0","delivery_count":2,"at_ms":1733143440123}`)

	got, err := events.Decode(stamped)
	require.NoError(t, err)
	require.Equal(t, events.TypeStaleRejected, got.Type)
	require.Equal(t, events.OperationRequeue, got.Operation)
	require.Equal(t, int64(1733143440123), got.AtMS)
	require.True(t, got.UnitScoped())
}
