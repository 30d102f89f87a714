// Package machinery holds what the default engine of package queue keeps
// between transitions so that they cost fewer round trips, none of which
// needs the build's key layout: the server-anchored Clock, the per-worker
// Slots that hold kept reads and kept watches, the paces that decide when
// keeping reads or looking for idle entries pays (KeptPace, ReclaimPace),
// the memory of the worker guards a Build wrote (GuardMemo), and what
// the server does with consumers (ConsumerPolicy).
//
// Each piece has an off switch, set by the inline engine, under which it
// keeps and learns nothing. None decides a transition: what they hold
// only chooses what a transition reads and sends, and every decision
// stands on what its own transaction watches and reads
// (docs/design.md#engines).
package machinery
