package machinery

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// A reclaim walks each unit stream as XAUTOCLAIM would (see
// docs/design.md#reclaim), and whether XAUTOCLAIM names the worker a
// consumer of the stream's group depends on
// the server: Redis 7.0 creates the consumer only when it claims an entry,
// Redis 7.2 and later (Valkey included, which reports redis_version 7.2.4)
// create it on every call, claim or not. A reclaim here reads with XPENDING
// and claims with XCLAIM, so on the second kind of server it creates the
// consumer itself (XGROUP CREATECONSUMER) wherever an XAUTOCLAIM would
// have: the group's consumer list is part of what a transition leaves
// behind, and XINFO shows it.
//
// Learning which kind of server this is costs one HELLO (no arguments: it
// changes nothing on the connection and answers the server's name and
// version), sent with the first reclaim's reads. HELLO is in @connection,
// which any client that logs in with HELLO 3 has. A server that refuses it
// (a RESP2-only proxy, an ACL without it) is asked INFO server next; one
// that refuses that too (an ACL with -info) is taken as lazy,
// the older behaviour: a consumer an XAUTOCLAIM would have left is then
// missing from XINFO CONSUMERS, which no transition reads. A refusal is
// never an error of the reclaim. Which workers are already consumers is
// remembered per build, so that a worker polling for idle units pays for
// the creation once. hopper never deletes consumers; one deleted by hand is created again by
// the worker's next read of the stream or claim, not by a reclaim that
// finds nothing.

// ConsumerPolicy is what a build knows of its server's consumer creation and
// of which workers it has already created.
type ConsumerPolicy struct {
	learnt  atomic.Int32 // 0 unknown, 1 lazy (claim only), 2 eager (every call)
	noHello atomic.Bool  // HELLO was refused: ask INFO server instead
	known   sync.Map     // consumerKey -> struct{}: consumers this build created
	// Off: the inline engine's: nothing is remembered of who was created.
	Off bool
}

const (
	consumersUnknown int32 = iota
	consumersLazy
	consumersEager
)

type consumerKey struct{ stream, worker string }

// Probe returns HELLO, or INFO server once HELLO was refused, when the
// policy is still to be learnt.
func (p *ConsumerPolicy) Probe(c rueidis.DedicatedClient) (rueidis.Completed, bool) {
	switch {
	case p.learnt.Load() != consumersUnknown:
		return rueidis.Completed{}, false
	case p.noHello.Load():
		return c.B().Info().Section("server").Build(), true
	}
	return c.B().Hello().Build(), true
}

// Learn reads the probe's reply. A failed read (the connection) leaves the
// policy unknown, to be asked again; a refused HELLO, or one without a
// version, turns to INFO; a refused INFO, or one without a version (an
// embedded or compatible server), is taken as lazy.
func (p *ConsumerPolicy) Learn(r rueidis.RedisResult) {
	if !p.noHello.Load() {
		p.learnHello(r)
		return
	}
	text, err := r.ToString()
	if err != nil {
		if _, answered := rueidis.IsRedisErr(err); answered {
			p.learnt.Store(consumersLazy)
		}
		return
	}
	p.store(eagerConsumers(text))
}

func (p *ConsumerPolicy) learnHello(r rueidis.RedisResult) {
	fields, err := r.AsStrMap()
	if err != nil {
		if r.NonRedisError() == nil {
			p.noHello.Store(true) // refused, or not a map: ask INFO
		}
		return
	}
	v, ok := fields["version"]
	if !ok {
		p.noHello.Store(true)
		return
	}
	p.store(atLeast72(v))
}

func (p *ConsumerPolicy) store(eager bool) {
	if eager {
		p.learnt.Store(consumersEager)
	} else {
		p.learnt.Store(consumersLazy)
	}
}

// eagerConsumers reports whether the server that wrote this INFO server
// text creates a consumer on every XAUTOCLAIM: redis_version 7.2 or later.
func eagerConsumers(info string) bool {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return atLeast72(v)
		}
	}
	return false
}

// atLeast72 reports whether version (HELLO's version, INFO's redis_version)
// is 7.2 or later. Valkey's versions start at 7.2.4, so HELLO's version,
// which is Valkey's own, reads right too.
func atLeast72(version string) bool {
	parts := strings.SplitN(version, ".", 3)
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

// Create returns the XGROUP CREATECONSUMER of group that stands for an
// XAUTOCLAIM of stream by worker, or nothing when the server would not
// have created the consumer or this build already has.
func (p *ConsumerPolicy) Create(c rueidis.DedicatedClient, stream, group, worker string) (rueidis.Completed, bool) {
	if p.learnt.Load() != consumersEager {
		return rueidis.Completed{}, false
	}
	if _, ok := p.known.Load(consumerKey{stream, worker}); ok {
		return rueidis.Completed{}, false
	}
	return c.B().XgroupCreateconsumer().Key(stream).Group(group).Consumer(worker).Build(), true
}

// Created records that worker is now a consumer of each of streams.
func (p *ConsumerPolicy) Created(worker string, streams []string) {
	if p.Off {
		return
	}
	for _, s := range streams {
		p.known.Store(consumerKey{s, worker}, struct{}{})
	}
}
