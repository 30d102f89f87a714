// Package events is the vocabulary of a build's attempt log: the JSON object
// each transition appends to the attempts stream (one field "json" per entry),
// and the way back from those bytes to typed values.
//
// The log is read by people, diffed between runs, parsed by the report and
// compared by callers moving from the transition script hopper replaces, so
// every unit-scoped event is written with that script's keys in its order,
// null exactly where it writes null, numbers as JSON numbers and strings
// without HTML escaping. Events the worker builds itself (worker_error,
// stale_rejected) are passed through with only at_ms stamped on.
//
// The package is pure: bytes and plain values in, bytes and plain values out,
// no Redis client and no clock (at_ms is the caller's, taken from the Redis
// server's TIME). The queue package uses it to build what it writes; the report
// uses Decode to read the log back.
//
// Every function and method in the package is safe for concurrent use: none
// keeps state between calls, and Encode methods do not modify their receiver.
package events
