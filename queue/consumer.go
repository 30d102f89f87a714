package queue

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// A reclaim in the reference walks each unit stream with XAUTOCLAIM, and
// whether that names the worker a consumer of the stream's group depends on
// the server: Redis 7.0 creates the consumer only when it claims an entry,
// Redis 7.2 and later (Valkey included, which reports redis_version 7.2.4)
// create it on every call, claim or not. A reclaim here reads with XPENDING
// and claims with XCLAIM, so on the second kind of server it creates the
// consumer itself (XGROUP CREATECONSUMER) wherever the reference's XAUTOCLAIM
// would have: the group's consumer list is part of what a transition leaves
// behind, and XINFO shows it.
//
// Learning which kind of server this is costs one INFO, sent with the first
// reclaim's reads. Which workers are already consumers is remembered per
// build, so that a worker polling for idle units pays for the creation once.
// hopper never deletes consumers; one deleted by hand is created again by
// the worker's next read of the stream or claim, not by a reclaim that
// finds nothing.

// consumerPolicy is what a build knows of its server's consumer creation and
// of which workers it has already created.
type consumerPolicy struct {
	learnt atomic.Int32 // 0 unknown, 1 lazy (claim only), 2 eager (every call)
	known  sync.Map     // consumerKey -> struct{}: consumers this build created
}

const (
	consumersUnknown int32 = iota
	consumersLazy
	consumersEager
)

type consumerKey struct {
	stream Stream
	worker string
}

// probe returns INFO server when the policy is still to be learnt.
func (p *consumerPolicy) probe(c rueidis.DedicatedClient) (rueidis.Completed, bool) {
	if p.learnt.Load() != consumersUnknown {
		return rueidis.Completed{}, false
	}
	return c.B().Info().Section("server").Build(), true
}

// learn reads the probe's reply. A server that answers without a version
// (an embedded or compatible server) is taken as lazy; a failed read leaves
// the policy unknown, to be asked again.
func (p *consumerPolicy) learn(r rueidis.RedisResult) {
	text, err := r.ToString()
	if err != nil {
		if _, answered := rueidis.IsRedisErr(err); answered {
			p.learnt.Store(consumersLazy)
		}
		return
	}
	if eagerConsumers(text) {
		p.learnt.Store(consumersEager)
	} else {
		p.learnt.Store(consumersLazy)
	}
}

// eagerConsumers reports whether the server that wrote this INFO server
// text creates a consumer on every XAUTOCLAIM: redis_version 7.2 or later.
func eagerConsumers(info string) bool {
	for line := range strings.Lines(info) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:")
		if !ok {
			continue
		}
		parts := strings.SplitN(v, ".", 3)
		if len(parts) < 2 {
			return false
		}
		major, err1 := strconv.Atoi(parts[0])
		minor, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil {
			return false
		}
		return major > 7 || major == 7 && minor >= 2
	}
	return false
}

// create returns the XGROUP CREATECONSUMER that stands for the reference's
// XAUTOCLAIM of stream by worker, or nothing when the server would not have
// created the consumer or this build already has.
func (p *consumerPolicy) create(c rueidis.DedicatedClient, k Keys, s Stream, worker string) (rueidis.Completed, bool) {
	if p.learnt.Load() != consumersEager {
		return rueidis.Completed{}, false
	}
	if _, ok := p.known.Load(consumerKey{s, worker}); ok {
		return rueidis.Completed{}, false
	}
	return c.B().XgroupCreateconsumer().Key(k.stream(s)).Group(Group).Consumer(worker).Build(), true
}

// created records that worker is now a consumer of each of streams.
func (p *consumerPolicy) created(worker string, streams []Stream) {
	for _, s := range streams {
		p.known.Store(consumerKey{s, worker}, struct{}{})
	}
}
