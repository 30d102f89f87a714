package queue

import (
	"errors"
	"fmt"

	"github.com/redis/rueidis"
)

// Mixed deployments. hopper's transitions are fenced on guard keys that
// every change to an entry's owner writes (see package fence). The
// transition script hopper replaces writes none, and neither does any
// other XACK or XCLAIM: a hopper reclaim that read an entry, then commits
// after the script finalized it, is not aborted, and the unit is finalized
// twice. No
// transaction can tell from the stream that this happened: WATCH does not
// see consumer-group changes, which is why the guards exist.
//
// So a build says who may run it. Publish writes metaGuarded in meta, in
// the transaction that lays the build out; the script's publishers do not.
// Transition, the entry point of callers moving from the script, refuses
// every transition that reads meta on a build without the mark, with
// ErrUnguarded, before it writes anything. A safe mode is not possible:
// whatever hopper watched, a script's settlement in between would not abort
// it. The check costs nothing more: the meta read every transition makes
// already (metaRead) asks for the mark in the same command. The typed API
// does not check: hopper's own workers publish the builds they run, and
// builds laid out by hand (tests, benchmarks) are theirs to run.
//
// Prebuilt events (worker_error, stale_rejected) are let through: they are
// appended, decide on no entry and do not read meta, so that a worker can
// report a build whose state is gone. See docs/design.md#mixed-deployments.

// ErrUnguarded: Transition was called on a build whose meta lacks the mark
// hopper's publisher writes (the build was laid out by the script's
// publisher, or by hand). Its other callers may be the script, which writes
// no guards, and hopper's fence cannot hold against them. Nothing was
// written. Switch all of a build's callers at once.
var ErrUnguarded = errors.New("queue: build not published as guarded")

// metaGuarded is the meta field that marks a build published by hopper.
const (
	metaGuarded = "guarded"
	guardedMark = "1"
)

// metaRead is the read of every transition's first check
// (docs/design.md#transitions): whether meta holds its state. It asks for
// meta's state, which only a publisher writes, in the transaction that
// creates meta, rather than for the key: a meta deleted or evicted between
// a settlement's reads and its commit (meta is read, not watched: every
// finalize writes it) is re-created by that commit's count, holding that
// field alone, and every transition after it must still find the build's
// state gone (docs/design.md#ttls). A Build that must run guarded builds
// only (Transition's) also asks for the mark, in the same command.
func (sc *schema) metaRead(c rueidis.DedicatedClient) rueidis.Completed {
	return sc.metaReadOn(c.B())
}

// metaReadOn is metaRead, built with bld.
func (sc *schema) metaReadOn(bld rueidis.Builder) rueidis.Completed {
	if sc.guardedOnly {
		return bld.Hmget().Key(sc.keys.Meta).Field(metaState, metaGuarded).Build()
	}
	return bld.Hexists().Key(sc.keys.Meta).Field(metaState).Build()
}

// metaFound reads metaRead's reply: whether meta holds its state. A meta
// that does but lacks the mark, on a Build that requires it, is
// ErrUnguarded; a missing meta is not (the caller reports it CORRUPT).
func (sc *schema) metaFound(r rueidis.RedisResult) (bool, error) {
	if !sc.guardedOnly {
		n, err := r.AsInt64()
		return n == 1, err
	}
	vals, err := fieldValues(r, 2, "HMGET meta")
	if err != nil {
		return false, err
	}
	if vals[0].IsNil() {
		return false, nil
	}
	if mark, _ := vals[1].ToString(); mark != guardedMark {
		return false, fmt.Errorf("%w: %s has no %s=%s field, so it was not published by hopper, and the reference script, which writes no guards, may be settling its units: run all of a build's callers on hopper, or all on the script",
			ErrUnguarded, sc.keys.Meta, metaGuarded, guardedMark)
	}
	return true, nil
}
