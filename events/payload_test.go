package events_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
)

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		entries []events.ErrorEntry
		want    string
	}{
		{"nil is an empty array", nil, `[]`},
		{"empty is an empty array", []events.ErrorEntry{}, `[]`},
		{
			name: "key order, no HTML escaping, nil backtrace is []",
			entries: []events.ErrorEntry{
				{ExampleID: "./spec/a_spec.rb[1:2]", Description: "a <b> & c", Class: "RSpec::Expectations::ExpectationNotMetError", Message: "expected 1\ngot 2"},
				{ExampleID: "x", Description: "d", Class: "E", Message: "m", Backtrace: []string{"a.rb:1", "b.rb:2"}},
			},
			want: `[{"example_id":"./spec/a_spec.rb[1:2]","description":"a <b> & c","class":"RSpec::Expectations::ExpectationNotMetError","message":"expected 1\ngot 2","backtrace":[]},` +
				`{"example_id":"x","description":"d","class":"E","message":"m","backtrace":["a.rb:1","b.rb:2"]}]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireBytes(t, string(events.EncodeErrors(tc.entries)), tc.want)
		})
	}
}

// decodeErrors reads a payload back, failing the test if it is not a JSON array.
func decodeErrors(t testing.TB, b []byte) []json.RawMessage {
	t.Helper()
	var items []json.RawMessage
	require.NoErrorf(t, json.Unmarshal(b, &items), "got %.200s, want a JSON array", b)
	return items
}

func messageOf(t testing.TB, b []byte) string {
	t.Helper()
	var entries []events.ErrorEntry
	require.NoError(t, json.Unmarshal(b, &entries))
	require.Len(t, entries, 1)
	return entries[0].Message
}

func TestEncodeErrorsCapsMessages(t *testing.T) {
	tests := []struct {
		name    string
		message string
		want    string
	}{
		{"exactly 4096 bytes is kept", strings.Repeat("a", 4096), strings.Repeat("a", 4096)},
		{"4097 bytes cut to 4093 plus ...", strings.Repeat("a", 4097), strings.Repeat("a", 4093) + "..."},
		{"cut backs up out of a two-byte rune", strings.Repeat("é", 2049), strings.Repeat("é", 2046) + "..."},
		{"cut at a rune start keeps the rune before", "a" + strings.Repeat("é", 2048), "a" + strings.Repeat("é", 2046) + "..."},
		{"cut backs up out of a four-byte rune", strings.Repeat("😀", 1025), strings.Repeat("😀", 1023) + "..."},
		{"invalid UTF-8 replaced before counting", "bad \xff byte", "bad \uFFFD byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := messageOf(t, events.EncodeErrors([]events.ErrorEntry{{Message: tc.message}}))
			require.Equalf(t, tc.want, got, "got message of %d bytes, want %d", len(got), len(tc.want))
			require.LessOrEqualf(t, len(got), events.MaxMessageBytes, "got %d bytes, want at most %d", len(got), events.MaxMessageBytes)
			require.Truef(t, utf8.ValidString(got), "got invalid UTF-8 %q", got)
		})
	}
}

func TestEncodeErrorsCapsBacktraces(t *testing.T) {
	lines := make([]string, 21)
	for i := range lines {
		lines[i] = fmt.Sprintf("spec/a_spec.rb:%d", i+1)
	}
	b := events.EncodeErrors([]events.ErrorEntry{{Backtrace: lines}})
	var entries []events.ErrorEntry
	require.NoError(t, json.Unmarshal(b, &entries))
	require.Equalf(t, lines[:20], entries[0].Backtrace, "got %d lines, want the first 20", len(entries[0].Backtrace))
	require.Lenf(t, lines, 21, "got the caller's backtrace changed to %d lines, want it untouched", len(lines))
}

func TestEncodeErrorsTruncatesThePayload(t *testing.T) {
	one := events.EncodeErrors([]events.ErrorEntry{{}})
	room := events.MaxErrorsBytes - len(one) // description bytes that make the array exactly the cap

	t.Run("exactly 65536 bytes is kept", func(t *testing.T) {
		b := events.EncodeErrors([]events.ErrorEntry{{Description: strings.Repeat("x", room)}})
		require.Lenf(t, b, events.MaxErrorsBytes, "got %d bytes, want %d", len(b), events.MaxErrorsBytes)
		require.NotContains(t, string(b), "truncated")
	})

	t.Run("one byte over drops the entry", func(t *testing.T) {
		b := events.EncodeErrors([]events.ErrorEntry{{Description: strings.Repeat("x", room+1)}})
		requireBytes(t, string(b), `[{"truncated":1}]`)
	})

	t.Run("many entries keep the longest prefix that fits", func(t *testing.T) {
		entries := make([]events.ErrorEntry, 40)
		for i := range entries {
			entries[i] = events.ErrorEntry{
				ExampleID:   fmt.Sprintf("./spec/a_spec.rb[1:%d]", i+1),
				Description: "<&> " + strings.Repeat("d", 2500),
				Class:       "RuntimeError",
				Message:     strings.Repeat("m", 5000),
				Backtrace:   []string{"a.rb:1"},
			}
		}
		b := events.EncodeErrors(entries)
		require.LessOrEqualf(t, len(b), events.MaxErrorsBytes, "got %d bytes, want at most %d", len(b), events.MaxErrorsBytes)
		items := decodeErrors(t, b)
		kept := len(items) - 1
		marker := fmt.Sprintf(`{"truncated":%d}`, len(entries)-kept)
		requireBytes(t, string(items[kept]), marker)
		require.Positive(t, kept)

		// The kept entries are the first ones, capped, as encoded alone.
		for i, item := range items[:kept] {
			alone := decodeErrors(t, events.EncodeErrors(entries[i:i+1]))
			requireBytes(t, string(item), string(alone[0]))
		}
		// One more entry would not have fit.
		next := decodeErrors(t, events.EncodeErrors(entries[kept:kept+1]))[0]
		withNext := len(b) + len(",") + len(next) - (len(marker) - len(fmt.Sprintf(`{"truncated":%d}`, len(entries)-kept-1)))
		require.Greaterf(t, withNext, events.MaxErrorsBytes, "got %d entries kept, but %d would fit", kept, kept+1)
		require.Containsf(t, string(b), `"<&> `, "got HTML-escaped payload")
	})
}
