// Package fence decides whether a worker still owns the stream entry it is
// about to act on, and names the small companion keys that make that decision
// safe inside an optimistic Redis transaction.
//
// Redis does not abort a WATCHed transaction when another connection changes
// a consumer group (XACK, XCLAIM, XAUTOCLAIM, XREADGROUP): watching a stream
// key cannot protect a decision read from XPENDING. Every transition that
// changes an entry's ownership, idle time or existence therefore also writes
// the entry's guard key, and every transition that decides on the entry
// watches it. Transitions on different entries touch different guard keys and
// never abort each other.
//
// The package is pure: plain values in, decisions and key names out. It
// imports no Redis client; the queue package does the I/O.
package fence
