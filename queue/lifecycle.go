package queue

import "strings"

// The lifecycle of a build (TryLease, Publish, Status, Join) uses the two
// keys the transitions never touch: the publisher's lease and the tombstone.

// buildName is the build id when the keys carry one ("hopper:{id}:..."),
// else the meta key: for messages only.
func (b *Build) buildName() string {
	k := b.keys.Meta
	if i, j := strings.IndexByte(k, '{'), strings.IndexByte(k, '}'); i >= 0 && j > i+1 {
		return k[i+1 : j]
	}
	return k
}

// checkLifecycleKeys refuses a build opened with ScriptKeys, which names no
// leader or tombstone key: such builds are published by their callers, not
// by Publish.
func (b *Build) checkLifecycleKeys() error {
	if b.keys.Leader == "" || b.keys.Exists == "" {
		return errInvalid("keys of %s name no leader or tombstone key (made by ScriptKeys?): open the build with Open or BuildKeys", b.keys.Meta)
	}
	return nil
}
