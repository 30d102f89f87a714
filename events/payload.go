package events

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Caps on what a worker writes into the log, so one noisy failure cannot
// bloat the attempts stream or the report.
const (
	// MaxMessageBytes caps an error message, "..." included.
	MaxMessageBytes = 4096
	// MaxBacktraceLines caps a backtrace.
	MaxBacktraceLines = 20
	// MaxErrorsBytes caps the compact JSON of a whole errors payload.
	MaxErrorsBytes = 65536
)

// ErrorEntry is one failure in the errors payload of a finalized or requeued
// event. The field order is the payload's key order. The report can decode a
// payload into []ErrorEntry; the truncation marker {"truncated":n} then reads
// as an entry with every field empty.
type ErrorEntry struct {
	ExampleID   string   `json:"example_id"`
	Description string   `json:"description"`
	Class       string   `json:"class"`
	Message     string   `json:"message"`
	Backtrace   []string `json:"backtrace"`
}

// EncodeErrors returns the errors payload for Finalized.Errors or
// Requeued.Errors: a compact JSON array, not HTML-escaped, of the entries with
// each message capped at MaxMessageBytes and each backtrace at
// MaxBacktraceLines. If the array would exceed MaxErrorsBytes, trailing
// entries are dropped and {"truncated":<number dropped>} is appended so the
// result stays within MaxErrorsBytes. No entries give []. The entries are not
// modified; safe for concurrent use.
func EncodeErrors(entries []ErrorEntry) []byte {
	parts := make([][]byte, len(entries))
	size := len("[]") + max(len(entries)-1, 0) // brackets and commas
	for i, e := range entries {
		e.Message = capMessage(e.Message)
		e.Backtrace = capBacktrace(e.Backtrace)
		b, err := marshal(e)
		if err != nil {
			// Strings and a slice of strings always encode.
			panic("events: encoding an error entry: " + err.Error())
		}
		parts[i] = b
		size += len(b)
	}
	if size <= MaxErrorsBytes {
		return join(parts, nil, size)
	}

	// Keep the longest prefix that fits together with its marker. Each kept
	// entry costs far more than the one digit the marker may shrink by, so the
	// size only grows with the prefix.
	keep, keptSize := 0, len("[")
	for keep < len(parts) {
		next := keptSize + len(parts[keep]) + len(",")
		if next+len(truncated(len(parts)-keep-1))+len("]") > MaxErrorsBytes {
			break
		}
		keep, keptSize = keep+1, next
	}
	marker := truncated(len(parts) - keep)
	return join(parts[:keep], marker, keptSize+len(marker)+len("]"))
}

// truncated is the marker that replaces n dropped entries.
func truncated(n int) []byte {
	b := strconv.AppendInt([]byte(`{"truncated":`), int64(n), 10)
	return append(b, '}')
}

// join writes the JSON array of parts, then marker when not nil.
func join(parts [][]byte, marker []byte, size int) []byte {
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
	}
	if marker != nil {
		if len(parts) > 0 {
			out = append(out, ',')
		}
		out = append(out, marker...)
	}
	return append(out, ']')
}

// capMessage cuts s to at most MaxMessageBytes, "..." included, on a UTF-8
// boundary. Invalid UTF-8 is replaced first, so the cap counts the bytes the
// log will hold.
func capMessage(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxMessageBytes {
		return s
	}
	cut := MaxMessageBytes - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// capBacktrace keeps the first MaxBacktraceLines lines; nil becomes [] so the
// log always holds an array.
func capBacktrace(lines []string) []string {
	if lines == nil {
		return []string{}
	}
	return lines[:min(len(lines), MaxBacktraceLines)]
}
