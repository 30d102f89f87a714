// Package testresults reads the per-test results a unit's command reports
// (go test -json events, or a JUnit XML file) into plain Cases, and answers
// what they say about each unit: its tests that failed, passed or were
// skipped.
//
// It is pure: bytes from an io.Reader in, values out, no files, no clock and
// no Redis. The worker parses what an attempt's command gave, the queue keeps
// it beside the attempt, and the report writes one JUnit test case per Case.
//
// Every function in the package is safe for concurrent use.
package testresults
