package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// modeTracker tells a counting client which transition the (single) worker
// is running, so that round trips are counted per mode. A nil tracker, in
// the timed runs, does nothing.
type modeTracker struct{ mode atomic.Int32 }

// set records mode m; -1 is the reserve between transitions.
func (t *modeTracker) set(m int) {
	if t != nil {
		t.mode.Store(int32(m))
	}
}

// wireCounter counts what a client sends: round trips (one per Do or
// DoMulti) and commands, by mode, and which command names go at top level
// and which between MULTI and EXEC.
type wireCounter struct {
	tr *modeTracker

	mu         sync.Mutex
	roundTrips [nModes + 1]int64 // [nModes]: reserve
	commands   [nModes + 1]int64
	bytes      [nModes + 1]int64 // RESP-encoded request bytes
	sentTop    map[string]bool
	sentNested map[string]bool
}

func newWireCounter(tr *modeTracker) *wireCounter {
	return &wireCounter{tr: tr, sentTop: map[string]bool{}, sentNested: map[string]bool{}}
}

// record notes one round trip carrying cmds; inMulti is the connection's
// MULTI state, carried across round trips. It must run before the commands
// are sent: rueidis recycles them afterwards.
func (w *wireCounter) record(inMulti *bool, cmds ...rueidis.Completed) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := int(w.tr.mode.Load())
	if m < 0 {
		m = nModes
	}
	w.roundTrips[m]++
	w.commands[m] += int64(len(cmds))
	for i := range cmds {
		w.bytes[m] += respSize(cmds[i].Commands())
	}
	multi := false
	if inMulti == nil {
		inMulti = &multi
	}
	for i := range cmds {
		name := commandName(cmds[i].Commands())
		switch {
		case name == "multi":
			w.sentTop[name] = true
			*inMulti = true
		case name == "exec" || name == "discard":
			w.sentTop[name] = true
			*inMulti = false
		case *inMulti:
			w.sentNested[name] = true
		default:
			w.sentTop[name] = true
		}
	}
}

// respSize is the size of args as a RESP request: what the write costs on
// the wire, and whether a round trip fits in one packet.
func respSize(args []string) int64 {
	n := int64(len(strconv.Itoa(len(args))) + 3)
	for _, a := range args {
		n += int64(len(strconv.Itoa(len(a)))+5) + int64(len(a))
	}
	return n
}

func (w *wireCounter) classifier(unseenNested bool) classifier {
	return classifier{sentTop: w.sentTop, sentNested: w.sentNested, unseenNested: unseenNested}
}

// countingClient is a rueidis.Client that counts through w what it sends.
// Only the calls queue and the harness make are counted: Do, DoMulti and
// dedicated connections.
type countingClient struct {
	rueidis.Client
	w *wireCounter
}

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.w.record(nil, cmd)
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.w.record(nil, cmds...)
	return c.Client.DoMulti(ctx, cmds...)
}

func (c countingClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(d rueidis.DedicatedClient) error {
		return fn(&countingDedicated{DedicatedClient: d, w: c.w})
	})
}

func (c countingClient) Dedicate() (rueidis.DedicatedClient, func()) {
	d, cancel := c.Client.Dedicate()
	return &countingDedicated{DedicatedClient: d, w: c.w}, cancel
}

type countingDedicated struct {
	rueidis.DedicatedClient
	w       *wireCounter
	inMulti bool
}

func (c *countingDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.w.record(&c.inMulti, cmd)
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c *countingDedicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.w.record(&c.inMulti, cmds...)
	return c.DedicatedClient.DoMulti(ctx, cmds...)
}

// wireProfile is what one side sends per transition of each mode, and per
// reserve.
type wireProfile struct {
	roundTrips, commands, bytes [nModes + 1]float64
	// The build's round trips per transition: the transitions' own
	// (perTransition) and the reserves' (reservePerTransition).
	perTransition, reservePerTransition float64
	// perUnit: every round trip of the drain, reserves included, per unit
	// of the build.
	perUnit float64
	class   classifier
}

// measureWire drains one small build with one worker through a counting
// client: round trips and commands per transition of each mode, and the
// command names the side sends at top level and inside MULTI, which tell
// apart what commandstats counts twice. Not timed.
func measureWire(ctx context.Context, e *env, cfg config, sideName string, units int) (wireProfile, error) {
	tr := &modeTracker{}
	wc := newWireCounter(tr)
	b, err := publish(ctx, e.admin, fmt.Sprintf("bench-wire-%s", sideName), units)
	if err != nil {
		return wireProfile{}, err
	}
	s, client, closeSide, err := e.openSide(sideName, b, func(c rueidis.Client) rueidis.Client { return countingClient{c, wc} }, nil)
	if err != nil {
		return wireProfile{}, err
	}
	defer closeSide()
	w := newWorker("w0", units)
	wctx, cancel := workerContext(ctx, cfg.ctx)
	defer cancel()
	if err := w.drain(wctx, client, b, s, tr); err != nil {
		return wireProfile{}, fmt.Errorf("%s: %w", sideName, err)
	}
	if err := b.check(ctx, e.admin); err != nil {
		return wireProfile{}, fmt.Errorf("%s: %w", sideName, err)
	}
	var p wireProfile
	want := b.expected()
	var trips, transitions int64
	for m := range nModes {
		trips += wc.roundTrips[m]
		transitions += want[m]
	}
	p.perTransition = float64(trips) / float64(transitions)
	p.reservePerTransition = float64(wc.roundTrips[nModes]) / float64(transitions)
	p.perUnit = float64(trips+wc.roundTrips[nModes]) / float64(len(b.units))
	for m := range nModes {
		p.roundTrips[m] = float64(wc.roundTrips[m]) / float64(want[m])
		p.commands[m] = float64(wc.commands[m]) / float64(want[m])
		p.bytes[m] = float64(wc.bytes[m]) / float64(want[m])
	}
	p.roundTrips[nModes] = float64(wc.roundTrips[nModes]) / float64(want[modeAccount])
	p.commands[nModes] = float64(wc.commands[nModes]) / float64(want[modeAccount])
	p.bytes[nModes] = float64(wc.bytes[nModes]) / float64(want[modeAccount])
	// The script's own calls never cross the wire: anything commandstats
	// shows that its client did not send ran inside EVALSHA.
	p.class = wc.classifier(sideName == sideScript)
	return p, nil
}
