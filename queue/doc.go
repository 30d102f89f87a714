// Package queue is the one package of hopper that talks to Redis. It holds
// the key layout of a build and every in-flight transition of a unit
// (delivery accounting, reclaim, heartbeat, finalize, requeue, abandon,
// liveness and the worker's prebuilt events), each one atomic as an
// optimistic WATCH/MULTI/EXEC transaction run from Go: no script ever runs
// on the server.
//
// Each transition reads what it decides on, asks the pure packages (fence
// for ownership, budget for retries and reclaims, events for the log), and
// writes the outcome in one MULTI that also renews the build's TTLs. Its
// decision is guarded by small companion keys in the build's hash slot (see
// package fence), never by the stream, meta or workers keys that every
// transition writes: transitions on different units do not abort each other.
//
// The fenced transitions of one Build that arrive at once share
// transactions (see batch.go): each is still decided alone, on what was
// read for it, and gets its own outcome, but many workers of one process
// cost far fewer round trips and commands than one transaction each.
//
// Around the transitions, the build's lifecycle: TryLease and Publish lay a
// build out, Status and Join read or publish it, Reserve hands a worker its
// next unit and Progress tells when the build is complete.
//
// Two ways in: the typed API on *Build, and Transition, which takes and
// returns exactly what the reference script's callers pass and receive.
package queue
