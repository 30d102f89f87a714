// Package timings holds what earlier builds of a suite measured of each
// unit, and the order that knowledge gives the next build: longest expected
// first, so that the last unit to start is a short one and no worker slot
// waits long for the build's slowest unit.
//
// A Table maps unit ids to durations and has one encoding, the same on
// Redis (see queue.LoadTimings) and in a file. The package is pure: plain
// values in, orders and bytes out; the queue package and the command do the
// I/O. Every function is safe for concurrent use; a Table is a map and is
// not safe for concurrent writes.
package timings
