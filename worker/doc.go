// Package worker runs a build's units in a Go program: it joins the build
// (publishing it when first), takes units one at a time, runs each with the
// caller's function, keeps the hold on it alive while it runs, and settles
// its result, until every unit of the build has its final state.
//
// Many workers, in one process or many, run one build together; each needs
// its own worker id. Run returns nil when the build is complete, whatever the
// tests did: the verdict belongs to the build's report, read from the attempt
// log. A worker that stops or dies leaves its unit to be reclaimed by the
// others once it has been silent for Config.Timeout.
//
// The loop (docs/design.md#transitions):
//   - reclaim a unit whose owner went silent, else take a requeued unit, else
//     a new one (waiting up to Config.Block);
//   - run it, with a heartbeat every min(Timeout/3, 30 s); past
//     MaxUnitDuration the unit is recorded abandoned and its hold let go, and
//     past MaxUnitDuration+Timeout the worker aborts (ErrAborted, exit 4);
//   - settle it: passed units are finalized, failed ones requeued within the
//     build's retry budget (or finalized as failed), and a result whose
//     reservation was lost meanwhile is discarded and recorded as
//     stale_rejected;
//   - with nothing to take, record that the worker is alive and check
//     whether the build is complete.
//
// Each attempt's output is buffered in its Result and printed only when that
// attempt's result counts, so every failure is printed once.
//
// Run is safe to call from many goroutines at once, each with its own worker
// id; a Config and a Suite are plain values, read and never modified.
package worker
