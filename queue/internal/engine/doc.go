// Package engine is how a Build's transitions reach Redis. A transition
// hands it a plan: what it watches, what it reads, and how it decides on
// the replies. The engine owns where those replies come from and what rides
// with them:
//
//   - fresh: a transition's own WATCH and reads, then its commit;
//   - batched: transitions that arrive at once share one transaction;
//   - chained: a commit carries the next batch's WATCH and reads behind
//     its EXEC;
//   - kept reads: a lone commit carries its worker's likely next
//     transition's WATCH and reads, kept for it;
//   - kept watches: a connection left watching a worker's guard for the
//     transition it calls next;
//   - carried reads: whatever a commit's Domain asks it to carry (the
//     read-ahead of a worker's next reservation).
//
// It also owns what serves them: the optimistic runner (package txn), the
// per-worker slots and paces, the clock anchored on the server's TIME
// replies, and the memory of the worker guards.
//
// One rule holds on every path, and is kept here alone (decideKept): reads
// made before a transition was called (kept reads, a kept watch) may back
// a commit, whose EXEC checks them, never a refusal, which nothing checks.
// A decision on them that refuses or fails starts over on fresh reads.
//
// New(…, Inline: true) is the inline engine: every transition alone on a
// connection of its own, a TIME of its own, nothing carried, kept or
// learnt. It is the reference the default engine is checked against.
package engine
