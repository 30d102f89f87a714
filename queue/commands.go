package queue

import (
	"strconv"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/redis/rueidis"
)

// schema is a build's key layout and what its transitions send: the
// commands they share, named once, built the same way whoever sends them
// and from whichever engine. It reads nothing and holds no state but the
// layout.
type schema struct {
	keys    Keys
	ttlMS   int64
	ttlText string // ttlMS as sent, formatted once
	// guardedOnly: refuse builds whose meta lacks the guarded mark
	// (Transition's Builds; see meta.go).
	guardedOnly bool
	// workerGuards maps a worker id to its guard key, named once: every
	// transition of the worker watches it.
	workerGuards sync.Map
}

// workerGuard is the guard key of worker, from workerGuards.
func (sc *schema) workerGuard(worker string) string {
	if key, ok := sc.workerGuards.Load(worker); ok {
		return key.(string)
	}
	key := sc.keys.workerGuard(worker)
	sc.workerGuards.Store(worker, key)
	return key
}

func newSchema(keys Keys, ttl time.Duration) *schema {
	return &schema{keys: keys, ttlMS: ttl.Milliseconds(), ttlText: strconv.FormatInt(ttl.Milliseconds(), 10)}
}

// The commands that several transitions send: the writes they share (TTL
// renewal, the worker's record, the log, guards). The meta check every one
// starts with is metaRead (see meta.go).

// renew is the PEXPIRE of the six live keys every commit sends, which
// touches only those that exist (docs/design.md#ttls).
func (sc *schema) renew(c rueidis.DedicatedClient, cmds rueidis.Commands) rueidis.Commands {
	for _, key := range sc.keys.live() {
		cmds = append(cmds, c.B().Arbitrary("PEXPIRE").Keys(key).Args(sc.ttlText).Build())
	}
	if sc.keys.baseMeta != "" {
		// A retry round's transitions keep the build's own meta, which
		// names the round, alive with theirs (see round.go).
		cmds = append(cmds, c.B().Arbitrary("PEXPIRE").Keys(sc.keys.baseMeta).Args(sc.ttlText).Build())
	}
	return cmds
}

func (sc *schema) touchWorker(c rueidis.DedicatedClient, worker string, rec workerRecord, now int64, cur current, delta float64) rueidis.Completed {
	return c.B().Hset().Key(sc.keys.Workers).FieldValue().FieldValue(worker, rec.touch(now, cur, delta)).Build()
}

func (sc *schema) appendEvent(c rueidis.DedicatedClient, json []byte) rueidis.Completed {
	json = events.StampRound(json, sc.keys.round)
	return c.B().Xadd().Key(sc.keys.Attempts).Id("*").FieldValue().FieldValue("json", string(json)).Build()
}

// setGuard marks a change to what a guard protects, so that every
// transaction that read it under WATCH aborts and reads again.
func (sc *schema) setGuard(c rueidis.DedicatedClient, key, token string) rueidis.Completed {
	return c.B().Arbitrary("SET").Keys(key).Args(token, "PX", sc.ttlText).Build()
}

// dropGuard appends to cmds the retirement of the guard of an entry gone
// from the pending list. A DEL alone would not do: deleting a key that does not exist (an entry
// never heartbeated or reclaimed has no guard yet) changes nothing, and a
// transaction watching the absent key would still commit. SET then DEL, in
// the same MULTI, aborts every watcher and leaves no key behind.
func (sc *schema) dropGuard(c rueidis.DedicatedClient, cmds rueidis.Commands, key, token string) rueidis.Commands {
	return append(cmds, sc.setGuard(c, key, token), c.B().Del().Key(key).Build())
}
