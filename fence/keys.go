package fence

import "strings"

// The guard keys live beside a build's own keys. Their names derive from a
// prefix that hashes to the build's cluster slot (see SlotPrefix), so a
// transaction that touches them stays in one slot.

// EntryKey names the guard of one pending entry. Every transition that
// changes the entry's owner, delivery count, idle time or existence writes it;
// every transition that decides on the entry watches it.
func EntryKey(prefix, stream, entryID string) string {
	return prefix + "fence:" + stream + ":" + entryID
}

// WorkerKey names the guard of one worker's record in the workers hash. The
// record is read, changed and written back by every transition of that worker,
// so two of them racing (a heartbeat beside a finalize) must not both commit
// from the same read. It also holds the tokens of the worker's last commits,
// which resolve a commit whose reply was lost.
func WorkerKey(prefix, workerID string) string {
	return prefix + "fence:worker:" + workerID
}

// TailKey names the guard of the priority stream's tail. A requeue picks the
// id of the entry it adds (its event names it, and a MULTI cannot feed one
// command's reply into another), so two requeues must not pick from the same
// tail; the same key guards the count of units that entered retry, which the
// requeue tolerance reads.
func TailKey(prefix string) string {
	return prefix + "fence:priority-tail"
}

// SlotPrefix returns a key prefix whose every extension hashes to the same
// Redis Cluster slot as key. When key carries a hash tag ("hopper:{b}:units")
// the prefix keeps it; otherwise the prefix is a tag chosen to land on key's
// slot, so guard keys of arbitrary caller-chosen key names stay with them.
func SlotPrefix(key string) string {
	if _, ok := hashTag(key); ok {
		// "hopper:{b}:units" gives "hopper:{b}:", the build's own prefix.
		if base, cut := strings.CutSuffix(key, "units"); cut && Slot(base+"x") == Slot(key) {
			return base
		}
		return key + ":"
	}
	return "{" + TagForSlot(Slot(key)) + "}:"
}
