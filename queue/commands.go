package queue

import (
	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
)

// The commands that several transitions send: the writes they share (TTL
// renewal, the worker's record, the log, guards). The meta check every one
// starts with is metaRead (see guarded_mark.go).

// renew is the PEXPIRE of the six live keys every commit sends, which
// touches only those that exist (docs/design.md#ttls).
func (b *Build) renew(c rueidis.DedicatedClient, cmds rueidis.Commands) rueidis.Commands {
	for _, key := range b.keys.live() {
		cmds = append(cmds, c.B().Arbitrary("PEXPIRE").Keys(key).Args(b.ttlText).Build())
	}
	if b.keys.baseMeta != "" {
		// A retry round's transitions keep the build's own meta, which
		// names the round, alive with theirs (see round.go).
		cmds = append(cmds, c.B().Arbitrary("PEXPIRE").Keys(b.keys.baseMeta).Args(b.ttlText).Build())
	}
	return cmds
}

func (b *Build) touchWorker(c rueidis.DedicatedClient, worker string, rec workerRecord, now int64, cur current, delta float64) rueidis.Completed {
	return c.B().Hset().Key(b.keys.Workers).FieldValue().FieldValue(worker, string(rec.touch(now, cur, delta))).Build()
}

func (b *Build) appendEvent(c rueidis.DedicatedClient, json []byte) rueidis.Completed {
	json = events.StampRound(json, b.keys.round)
	return c.B().Xadd().Key(b.keys.Attempts).Id("*").FieldValue().FieldValue("json", string(json)).Build()
}

// setGuard marks a change to what a guard protects, so that every
// transaction that read it under WATCH aborts and reads again.
func (b *Build) setGuard(c rueidis.DedicatedClient, key, token string) rueidis.Completed {
	return c.B().Arbitrary("SET").Keys(key).Args(token, "PX", b.ttlText).Build()
}

// dropGuard retires the guard of an entry that is gone from the pending list.
// A DEL alone would not do: deleting a key that does not exist (an entry
// never heartbeated or reclaimed has no guard yet) changes nothing, and a
// transaction watching the absent key would still commit. SET then DEL, in
// the same MULTI, aborts every watcher and leaves no key behind.
func (b *Build) dropGuard(c rueidis.DedicatedClient, key, token string) rueidis.Commands {
	return rueidis.Commands{b.setGuard(c, key, token), c.B().Del().Key(key).Build()}
}
