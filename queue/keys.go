package queue

import (
	"fmt"

	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue/internal/fencing"
)

// Group is the consumer group every worker reads both unit streams through.
const Group = "workers"

// Stream names one of a build's two unit streams the way transitions and
// events name it: "units", or "units:priority" for requeued units, which are
// served first.
type Stream string

// The two unit streams.
const (
	StreamUnits    Stream = "units"
	StreamPriority Stream = "units:priority"
)

// ParseStream checks a stream name given by a caller.
func ParseStream(s string) (Stream, error) {
	switch Stream(s) {
	case StreamUnits, StreamPriority:
		return Stream(s), nil
	}
	return "", fmt.Errorf("%w: unknown stream %q (want %q or %q)", ErrInvalidArgument, s, StreamUnits, StreamPriority)
}

// Keys names every key of one build (docs/design.md#keys). The six live
// keys come in the order Transition takes them as KEYS; Leader and Exists
// belong to publishing. The guard keys the transitions add (see package
// fence) derive from Units so that they share its cluster slot.
type Keys struct {
	Units, Priority, Attempts, Meta, UnitState, Workers string
	Leader, Exists                                      string

	prefix string // guard-key prefix in the build's slot
	// round is the retry round these keys are of (0 or 1: the build's
	// first); baseMeta the build's own meta, which a round's transitions
	// renew with its own keys (see round.go).
	round    int
	baseMeta string
}

// BuildKeys returns the keys of build buildID: hopper:{<build>}:units and so
// on. The braces are a cluster hash tag: every key of a build, the guard keys
// included, hashes to one slot. It does not check buildID: Open does, and
// refuses the empty id, whose "{}" Redis does not read as a tag (each key
// would then hash to a slot of its own).
func BuildKeys(buildID string) Keys {
	p := "hopper:{" + buildID + "}:"
	return Keys{
		Units: p + "units", Priority: p + "units:priority", Attempts: p + "attempts",
		Meta: p + "meta", UnitState: p + "unit_state", Workers: p + "workers",
		Leader: p + "leader", Exists: p + "exists",
		prefix: fence.SlotPrefix(p + "units"),
	}
}

// ScriptKeys takes the six KEYS of Transition (units, units:priority,
// attempts, meta, unit_state, workers), in the order callers of the
// transition script hopper replaces pass them.
func ScriptKeys(keys []string) (Keys, error) {
	if len(keys) != 6 {
		return Keys{}, fmt.Errorf("%w: want 6 keys (units, units:priority, attempts, meta, unit_state, workers), got %d", ErrInvalidArgument, len(keys))
	}
	for i, k := range keys {
		if k == "" {
			return Keys{}, fmt.Errorf("%w: key %d is empty", ErrInvalidArgument, i+1)
		}
	}
	return Keys{
		Units: keys[0], Priority: keys[1], Attempts: keys[2], Meta: keys[3], UnitState: keys[4], Workers: keys[5],
		prefix: fence.SlotPrefix(keys[0]),
	}, nil
}

// live returns the six keys every transition renews, in Transition's order.
func (k Keys) live() [6]string {
	return [6]string{k.Units, k.Priority, k.Attempts, k.Meta, k.UnitState, k.Workers}
}

func (k Keys) stream(s Stream) string {
	if s == StreamPriority {
		return k.Priority
	}
	return k.Units
}

func (k Keys) entryGuard(s Stream, entryID string) string {
	return fence.EntryKey(k.prefix, string(s), entryID)
}

func (k Keys) workerGuard(workerID string) string { return fence.WorkerKey(k.prefix, workerID) }

func (k Keys) tailGuard() string { return fence.TailKey(k.prefix) }

// entryGuards is false only under the hopper_unfenced build tag (see
// package fencing), which turns off the WATCH on entry guards so that a
// test can show what goes wrong without them: a transaction that watches
// the stream key (or nothing) does not see XACK, XCLAIM or XAUTOCLAIM by
// others, and units get settled twice; and a kept watch commits unwatched.
const entryGuards = fencing.EntryGuards
