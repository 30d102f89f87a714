package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// The replay is make bench-probe's second part: the whole workload at one
// worker, with every transition's writes sent in one round trip on the shared
// connection and nothing read or decided, the most any script-free design
// could do with the script's round trips. A drain through the library is
// captured first: each commit's MULTI...EXEC as sent, with the IDs the server
// gave its XADDs. Then the build is put back as it was published (DUMP and
// RESTORE) and drained again by a worker that sends the captured commits in
// order. At one worker the drain is deterministic, so the replay lays down
// the library's writes on the same state, and the harness's check of a
// drained build must pass after it.

// capturedTxn is one committed transition: the commands between MULTI and
// EXEC, each XADD's "*" replaced by the ID it was given.
type capturedTxn [][]string

// capture holds the commits its clients made, in order.
type capture struct {
	mu   sync.Mutex
	txns []capturedTxn
}

// capturingClient records every MULTI...EXEC that commits on a dedicated
// connection of the client it wraps.
type capturingClient struct {
	rueidis.Client
	cap *capture
}

func (c capturingClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(d rueidis.DedicatedClient) error {
		return fn(capturingDedicated{DedicatedClient: d, cap: c.cap})
	})
}

func (c capturingClient) Dedicate() (rueidis.DedicatedClient, func()) {
	d, cancel := c.Client.Dedicate()
	return capturingDedicated{DedicatedClient: d, cap: c.cap}, cancel
}

type capturingDedicated struct {
	rueidis.DedicatedClient
	cap *capture
}

func (c capturingDedicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if len(cmds) < 2 || commandName(cmds[0].Commands()) != "multi" {
		return c.DedicatedClient.DoMulti(ctx, cmds...)
	}
	// Copied before sending: rueidis recycles the commands once sent.
	txn := make(capturedTxn, 0, len(cmds)-2)
	for _, cmd := range cmds[1 : len(cmds)-1] {
		txn = append(txn, slices.Clone(cmd.Commands()))
	}
	res := c.DedicatedClient.DoMulti(ctx, cmds...)
	replies, err := res[len(res)-1].ToArray()
	if err != nil || len(replies) != len(txn) {
		return res // aborted or failed: what commits in its place is captured
	}
	for i, args := range txn {
		if len(args) > 2 && strings.EqualFold(args[0], "XADD") && args[2] == "*" {
			if args[2], err = replies[i].ToString(); err != nil {
				args[2] = "*"
			}
		}
	}
	c.cap.mu.Lock()
	c.cap.txns = append(c.cap.txns, txn)
	c.cap.mu.Unlock()
	return res
}

// snapshot is every key of the database, as DUMP gives it, with its TTL.
type snapshot map[string]struct {
	dump string
	pttl int64
}

func takeSnapshot(ctx context.Context, admin rueidis.Client) (snapshot, error) {
	keys, err := admin.Do(ctx, admin.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		return nil, err
	}
	s := snapshot{}
	for _, k := range keys {
		res := admin.DoMulti(ctx, admin.B().Dump().Key(k).Build(), admin.B().Pttl().Key(k).Build())
		dump, err := res[0].ToString()
		if err != nil {
			return nil, fmt.Errorf("DUMP %s: %w", k, err)
		}
		pttl, err := res[1].AsInt64()
		if err != nil {
			return nil, fmt.Errorf("PTTL %s: %w", k, err)
		}
		s[k] = struct {
			dump string
			pttl int64
		}{dump, max(pttl, 0)}
	}
	return s, nil
}

// restore empties the database and puts the snapshot's keys back.
func (s snapshot) restore(ctx context.Context, admin rueidis.Client) error {
	if err := admin.Do(ctx, admin.B().Flushall().Build()).Error(); err != nil {
		return err
	}
	for k, v := range s {
		if err := admin.Do(ctx, admin.B().Restore().Key(k).Ttl(v.pttl).SerializedValue(v.dump).Build()).Error(); err != nil {
			return fmt.Errorf("RESTORE %s: %w", k, err)
		}
	}
	return nil
}

// replay is a side that decides nothing: each transition sends the next
// captured commit, in one DoMulti on the shared connection, behind the
// version fence when fenced.
type replay struct {
	c      rueidis.Client
	txns   []capturedTxn
	next   *int
	fenced bool
	h      oneRTHeartbeat // its keys: the version guard, the scratch key, the guards watched
}

func (r replay) send(ctx context.Context) error {
	if *r.next >= len(r.txns) {
		return fmt.Errorf("replay: transition %d of %d captured", *r.next+1, len(r.txns))
	}
	txn := r.txns[*r.next]
	*r.next++
	cmds := make(rueidis.Commands, 0, len(txn)+5)
	if r.fenced {
		cmds = versionFence(r.c, cmds, r.h.version, r.h.scratch, r.h.worker, r.h.entryGuard)
	}
	cmds = append(cmds, r.c.B().Multi().Build())
	for _, args := range txn {
		cmds = append(cmds, r.c.B().Arbitrary(args...).Build())
	}
	cmds = append(cmds, r.c.B().Exec().Build())
	res := r.c.DoMulti(ctx, cmds...)
	for i, x := range res[:len(res)-1] {
		if err := x.Error(); err != nil {
			return fmt.Errorf("replay %d, command %d: %w", *r.next, i, err)
		}
	}
	replies, err := res[len(res)-1].ToArray()
	if rueidis.IsRedisNil(err) {
		return errProbeAborted
	}
	if err != nil {
		return fmt.Errorf("replay %d, EXEC: %w", *r.next, err)
	}
	if len(replies) != len(txn) {
		return fmt.Errorf("replay %d, EXEC: %d replies for %d commands", *r.next, len(replies), len(txn))
	}
	for i, x := range replies {
		if err := x.Error(); err != nil {
			return fmt.Errorf("replay %d, %s: %w", *r.next, txn[i][0], err)
		}
	}
	return nil
}

func (r replay) account(ctx context.Context, worker string, x entry) (queue.Reservation, error) {
	res := queue.Reservation{WorkerID: worker, Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ}
	if x.stream == queue.StreamPriority {
		res.RetryIndex = 1 // what tells the worker loop to finalize, not requeue
	}
	return res, r.send(ctx)
}

func (r replay) heartbeat(ctx context.Context, _ queue.Reservation) error { return r.send(ctx) }
func (r replay) finalize(ctx context.Context, _ queue.Reservation) error  { return r.send(ctx) }
func (r replay) requeue(ctx context.Context, _ queue.Reservation) error   { return r.send(ctx) }

// The replay's shapes: the library, the script, the captured writes alone,
// and behind the version fence.
const (
	replayHopper = iota
	replayScript
	replayWrites
	replayOneRT
	nReplayShapes
)

var replayShapeNames = [nReplayShapes]string{"hopper", "script", "writes", "one RT"}

const (
	replayUnits  = 1000
	replayRounds = 3 // measured, after one unmeasured
)

// replayRound publishes a build, captures a drain of it through the library,
// then drains it from the snapshot once per shape, each drain timed and
// checked.
func replayRound(ctx context.Context, e *env, round int) ([nReplayShapes]probeRun, error) {
	var out [nReplayShapes]probeRun
	if err := e.admin.Do(ctx, e.admin.B().Flushall().Build()).Error(); err != nil {
		return out, err
	}
	b, err := publish(ctx, e.admin, fmt.Sprintf("replay-%d", round), replayUnits)
	if err != nil {
		return out, err
	}
	snap, err := takeSnapshot(ctx, e.admin)
	if err != nil {
		return out, err
	}
	want := 0
	for _, n := range b.expected() {
		want += int(n)
	}
	const w = "w0"
	drain := func(s side, reader rueidis.Client) error {
		if err := newWorker(w, 4*replayUnits).drain(ctx, reader, b, s, nil); err != nil {
			return err
		}
		return b.check(ctx, e.admin)
	}

	captured := &capture{}
	qb, err := queue.Open(capturingClient{e.ours, captured}, b.id, queue.Options{TTL: ttl})
	if err != nil {
		return out, err
	}
	if err := drain(ours{qb}, e.ours); err != nil {
		return out, fmt.Errorf("capturing: %w", err)
	}
	if len(captured.txns) != want {
		return out, fmt.Errorf("captured %d commits, want one per transition, %d", len(captured.txns), want)
	}

	for shape := range nReplayShapes {
		if err := snap.restore(ctx, e.admin); err != nil {
			return out, err
		}
		var s side
		reader := e.ours
		switch shape {
		case replayHopper:
			qb, err := queue.Open(e.ours, b.id, queue.Options{TTL: ttl})
			if err != nil {
				return out, err
			}
			s = ours{qb}
		case replayScript:
			s, reader = script{c: e.script, sha: e.sha, keys: b.scriptKeys()}, e.script
		default:
			r := replay{c: e.ours, txns: captured.txns, next: new(int), fenced: shape == replayOneRT,
				h: newOneRTHeartbeat(b, queue.Reservation{WorkerID: w})}
			if err := r.h.setVersion(ctx, e.ours, 1); err != nil {
				return out, err
			}
			s = r
		}
		if out[shape], err = timed(ctx, e.admin, want, func() error { return drain(s, reader) }); err != nil {
			return out, fmt.Errorf("%s: %w", replayShapeNames[shape], err)
		}
	}
	return out, nil
}

// replayProbe runs the unmeasured round and replayRounds measured ones.
func replayProbe(ctx context.Context, e *env) ([nReplayShapes]probeRun, error) {
	var sum [nReplayShapes]probeRun
	for round := range replayRounds + 1 {
		r, err := replayRound(ctx, e, round)
		if err != nil {
			return sum, fmt.Errorf("replay round %d: %w", round, err)
		}
		if round == 0 {
			continue
		}
		for shape := range nReplayShapes {
			sum[shape].add(r[shape])
		}
	}
	return sum, nil
}

func printReplay(out io.Writer, runs [nReplayShapes]probeRun) {
	fmt.Fprintf(out, "\n== the workload at 1 worker, builds of %d units, %d rounds pooled after one unmeasured ==\n", replayUnits, replayRounds)
	fmt.Fprintln(out, "  hopper: the library; script: EVALSHA; writes: the library's commits, captured from a drain of the same")
	fmt.Fprintln(out, "  build, each sent in one DoMulti on the shared connection with no read and no fence; one RT: the same,")
	fmt.Fprintln(out, "  behind the version fence. Every drain is checked as make bench checks it.")
	fmt.Fprintf(out, "  %-8s %13s %13s %16s %10s %14s\n", "shape", "transitions/s", "srv cpu us/t", "client cpu us/t", "vs script", "srv vs script")
	for shape := range nReplayShapes {
		p := runs[shape]
		fmt.Fprintf(out, "  %-8s %13.0f %13.1f %16.1f %9.2fx %13.2fx\n", replayShapeNames[shape], p.perSecond(), p.serverUS(),
			p.clientUS(), p.perSecond()/runs[replayScript].perSecond(), p.serverUS()/runs[replayScript].serverUS())
	}
}
