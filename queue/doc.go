// Package queue is the one package of hopper that talks to Redis. It holds
// the key layout of a build and every in-flight transition of a unit
// (delivery accounting, reclaim, heartbeat, finalize, requeue, abandon,
// liveness and the worker's prebuilt events), each one atomic as an
// optimistic WATCH/MULTI/EXEC transaction run from Go: no script ever runs
// on the server. The design is docs/design.md.
//
// Each transition reads what it decides on, asks the pure packages (fence
// for ownership, budget for retries and reclaims, events for the log), and
// writes the outcome in one MULTI that also renews the build's TTLs. Its
// decision is guarded by small companion keys in the build's hash slot (see
// package fence), never by the stream, meta or workers keys that every
// transition writes: transitions on different units do not abort each other.
//
// A transition decides; an engine runs it. Each transition says what it
// watches and reads and how it decides on the replies (a fenced decision,
// a worker plan, the reclaim's looks and writes); the schema names the
// commands it writes. The Build's engine (Options.Engine) owns where the
// replies come from. The default engine shares round trips: the fenced
// transitions of one Build that arrive at once share transactions
// (docs/design.md#batching), a commit carries the next one's reads, and
// kept reads, kept watches and read-ahead serve a worker's likely next
// call. The inline engine runs each transition alone on reads of its
// own, and is the reference the default one is tested against. Either
// way, reads made before a call may back a commit, never a refusal.
//
// Internal packages hold what needs no key layout: queue/internal/txn
// runs the optimistic transactions (WATCH, attempt, commit, backoff,
// lost-reply resolution, what rides behind an EXEC, the merge of a
// batch's writes) on any connection with DoMulti; queue/internal/sched
// orders the fenced transitions into batches; queue/internal/machinery
// holds the server-anchored clock, the per-worker slots, the paces, the
// guard memory and the consumer policy; queue/internal/reclaim the watch
// set of a reclaim's second look; queue/internal/lru the cache of the
// Builds Transition shares; queue/internal/meter the OpenTelemetry
// instruments; and queue/internal/fencing the hopper_unfenced switch. All
// are unit-tested without Redis.
//
// A worker's life on one Build, as package worker lives it (Status reads a
// build without joining it; TryLease and Publish are what Join uses):
//
//   - Open the build (no I/O), then Join it with the manifest the worker
//     computed: the first to come publishes, the others load what it
//     published and check that they run the same suite.
//   - Reserve, again and again: it reclaims a unit whose owner went quiet,
//     or takes a new one. With ReserveOptions.ReadAhead the next
//     reservation's reads ride behind the settlement's EXEC. Nothing to
//     take is not the end: Liveness keeps the build alive while lost units
//     may come back, and Progress tells when every unit is final.
//   - While a unit runs, Heartbeat renews the hold; past the unit's budget,
//     Abandon gives it up to a reclaim.
//   - Settle with Finalize (passed, or failed for good) or Requeue (failed,
//     to be retried within the build's budget). AppendPrebuilt records what
//     the worker saw go wrong.
//
// Every transition's error is one of the sentinels (ErrStale: the worker
// lost the unit, drop the result; ErrCorrupt; ErrContention;
// ErrInvalidArgument; ErrOutcomeUnknown), wrapped with its detail, or a
// Redis or context error; Transient tells which are worth trying again.
//
// Observers (a report, a follower of the log) read without renewing or
// writing anything, so that watching a build never keeps a dead one alive:
// ReadPresence, ReadPoll, ReadAttempts and ReadUnitIDs for a report;
// ReadLook, ReadAttemptsAfter and ReadCompletion for a follower of a
// running build; ParseMeta to read meta as any publisher left it.
//
// Two ways in: the typed API on *Build, and Transition, which takes and
// returns exactly what callers of the transition script hopper replaces
// pass and receive, by mode name.
package queue
