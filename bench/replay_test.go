package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// The replay is make bench-probe's second part: the whole workload, with
// every transition's writes sent in one round trip on the shared connection
// and nothing read or decided, the most a script-free design could do that
// sends each transition's writes in a round trip of its own, as the script
// does. A drain through the library by one worker is captured first: each
// commit's MULTI...EXEC as sent, under the unit it was for. Then the build
// is put back as it was published (DUMP and RESTORE) and drained again by
// workers that send, for each transition of a unit, the unit's next
// captured commit.
// A unit's transitions come in the same order in every drain, so the replay
// lays down the library's writes on the same state (under the capturing
// worker's name where the replaying one differs; a requeue's new entry under
// a new ID, which the unit's later commits are sent with), and the harness's
// check of a drained build must pass after it.

// capturedTxn is one committed transition: the commands between MULTI and
// EXEC.
type capturedTxn [][]string

// capture holds the commits its clients made, by unit, in order. unit is
// the unit of the transition running: one worker runs one at a time, and a
// lone transition commits alone.
type capture struct {
	mu   sync.Mutex
	unit string
	txns map[string][]capturedTxn
	n    int
}

// capturingSide tells the capture which unit its transitions are for.
type capturingSide struct {
	side
	cap *capture
}

func (s capturingSide) setUnit(u string) {
	s.cap.mu.Lock()
	s.cap.unit = u
	s.cap.mu.Unlock()
}

func (s capturingSide) account(ctx context.Context, worker string, x entry) (queue.Reservation, error) {
	s.setUnit(x.unit)
	return s.side.account(ctx, worker, x)
}

func (s capturingSide) heartbeat(ctx context.Context, r queue.Reservation) error {
	s.setUnit(r.UnitID)
	return s.side.heartbeat(ctx, r)
}

func (s capturingSide) finalize(ctx context.Context, r queue.Reservation) error {
	s.setUnit(r.UnitID)
	return s.side.finalize(ctx, r)
}

func (s capturingSide) requeue(ctx context.Context, r queue.Reservation) error {
	s.setUnit(r.UnitID)
	return s.side.requeue(ctx, r)
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
	if replies, err := res[len(res)-1].ToArray(); err != nil || len(replies) != len(txn) {
		return res // aborted or failed: what commits in its place is captured
	}
	c.cap.mu.Lock()
	c.cap.txns[c.cap.unit] = append(c.cap.txns[c.cap.unit], txn)
	c.cap.n++
	c.cap.mu.Unlock()
	return res
}

// snapshot is every key of the database, as DUMP gives it, with its TTL.
type snapshot map[string]dumpedKey

type dumpedKey struct {
	dump string
	pttl int64 // 0: none
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
		s[k] = dumpedKey{dump, max(pttl, 0)}
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

// replay is a side that decides nothing: each transition of a unit sends
// the unit's next captured commit, in one DoMulti on the shared connection,
// behind the version fence of the acting worker when fenced.
type replay struct {
	c      rueidis.Client
	b      *build
	fenced bool

	mu         sync.Mutex
	txns       map[string][]capturedTxn // what is left of each unit's
	requeuedAs map[string]string        // a unit's requeued entry's captured ID
}

func (r *replay) send(ctx context.Context, worker, unit string) error {
	r.mu.Lock()
	left := r.txns[unit]
	if len(left) == 0 {
		r.mu.Unlock()
		return fmt.Errorf("replay: unit %s has no captured commit left", unit)
	}
	txn := left[0]
	r.txns[unit] = left[1:]
	r.mu.Unlock()
	cmds := make(rueidis.Commands, 0, len(txn)+5)
	if r.fenced {
		h := newOneRTHeartbeat(r.b, queue.Reservation{WorkerID: worker})
		cmds = versionFence(r.c, cmds, h.version, h.scratch, h.worker, h.entryGuard)
	}
	cmds = append(cmds, r.c.B().Multi().Build())
	for _, args := range txn {
		if len(args) > 2 && strings.EqualFold(args[0], "XADD") && args[1] == r.b.keys.Priority {
			// Requeues come in another order than when captured, so the
			// captured ID may be below the priority stream's top: the
			// server names the new entry instead. The captured ID is
			// recorded before the commit is sent, so that the worker that
			// reads the new entry can rename it in the unit's commits left.
			r.mu.Lock()
			r.requeuedAs[unit] = args[2]
			r.mu.Unlock()
			args = slices.Clone(args)
			args[2] = "*"
		}
		cmds = append(cmds, r.c.B().Arbitrary(args...).Build())
	}
	cmds = append(cmds, r.c.B().Exec().Build())
	res := r.c.DoMulti(ctx, cmds...)
	for i, x := range res[:len(res)-1] {
		if err := x.Error(); err != nil {
			return fmt.Errorf("replay of %s, command %d: %w", unit, i, err)
		}
	}
	replies, err := res[len(res)-1].ToArray()
	if rueidis.IsRedisNil(err) {
		return errProbeAborted
	}
	if err != nil {
		return fmt.Errorf("replay of %s, EXEC: %w", unit, err)
	}
	if len(replies) != len(txn) {
		return fmt.Errorf("replay of %s, EXEC: %d replies for %d commands", unit, len(replies), len(txn))
	}
	for i, x := range replies {
		if err := x.Error(); err != nil {
			return fmt.Errorf("replay of %s, %s: %w", unit, txn[i][0], err)
		}
	}
	return nil
}

// renamed sends the unit's commits left with its requeued entry's new ID
// where the captured one stood: in arguments, event JSON and entry guards'
// keys.
func (r *replay) renamed(unit, to string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := r.requeuedAs[unit]
	left := r.txns[unit]
	out := make([]capturedTxn, len(left))
	for i, txn := range left {
		out[i] = make(capturedTxn, len(txn))
		for j, args := range txn {
			out[i][j] = make([]string, len(args))
			for k, a := range args {
				out[i][j][k] = strings.ReplaceAll(a, from, to)
			}
		}
	}
	r.txns[unit] = out
}

func (r *replay) account(ctx context.Context, worker string, x entry) (queue.Reservation, error) {
	res := queue.Reservation{WorkerID: worker, Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ}
	if x.stream == queue.StreamPriority {
		res.RetryIndex = 1 // what tells the worker loop to finalize, not requeue
		r.renamed(x.unit, x.id)
	}
	return res, r.send(ctx, worker, x.unit)
}

func (r *replay) heartbeat(ctx context.Context, q queue.Reservation) error {
	return r.send(ctx, q.WorkerID, q.UnitID)
}

func (r *replay) finalize(ctx context.Context, q queue.Reservation) error {
	return r.send(ctx, q.WorkerID, q.UnitID)
}

func (r *replay) requeue(ctx context.Context, q queue.Reservation) error {
	return r.send(ctx, q.WorkerID, q.UnitID)
}

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

// drainWith drains b with n workers on side s, reading with reader, and
// checks the drained build.
func drainWith(ctx context.Context, admin rueidis.Client, b *build, s side, reader rueidis.Client, n int) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = newWorker(fmt.Sprintf("w%d", i), 4*replayUnits/n).drain(ctx, reader, b, s, nil)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return b.check(ctx, admin)
}

// replayRound publishes a build, captures a drain of it through the library
// by one worker, then drains it from the snapshot once per shape and worker
// count, each drain timed and checked.
func replayRound(ctx context.Context, e *env, round int) (map[int][]probeRun, error) {
	out := map[int][]probeRun{}
	if err := e.admin.Do(ctx, e.admin.B().Flushall().Build()).Error(); err != nil {
		return nil, err
	}
	b, err := publish(ctx, e.admin, fmt.Sprintf("replay-%d", round), replayUnits)
	if err != nil {
		return nil, err
	}
	snap, err := takeSnapshot(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	want := 0
	for _, n := range b.expected() {
		want += int(n)
	}
	captured := &capture{txns: map[string][]capturedTxn{}}
	qb, err := queue.Open(capturingClient{e.ours, captured}, b.id, queue.Options{TTL: ttl})
	if err != nil {
		return nil, err
	}
	if err := drainWith(ctx, e.admin, b, capturingSide{ours{qb}, captured}, e.ours, 1); err != nil {
		return nil, fmt.Errorf("capturing: %w", err)
	}
	if captured.n != want {
		return nil, fmt.Errorf("captured %d commits, want one per transition, %d", captured.n, want)
	}

	for _, n := range probeGoroutines {
		out[n] = make([]probeRun, nReplayShapes)
		for shape := range nReplayShapes {
			if err := snap.restore(ctx, e.admin); err != nil {
				return nil, err
			}
			var s side
			reader := e.ours
			switch shape {
			case replayHopper:
				qb, err := queue.Open(e.ours, b.id, queue.Options{TTL: ttl})
				if err != nil {
					return nil, err
				}
				s = ours{qb}
			case replayScript:
				s, reader = scriptSide(e.script, e.sha, b.scriptKeys()), e.script
			default:
				r := &replay{c: e.ours, b: b, fenced: shape == replayOneRT, txns: map[string][]capturedTxn{}, requeuedAs: map[string]string{}}
				for u, txns := range captured.txns {
					r.txns[u] = txns
				}
				for i := range n {
					h := newOneRTHeartbeat(b, queue.Reservation{WorkerID: fmt.Sprintf("w%d", i)})
					if err := h.setVersion(ctx, e.ours, 1); err != nil {
						return nil, err
					}
				}
				s = r
			}
			if out[n][shape], err = timed(ctx, e.admin, want, func() error { return drainWith(ctx, e.admin, b, s, reader, n) }); err != nil {
				return nil, fmt.Errorf("%s, %d workers: %w", replayShapeNames[shape], n, err)
			}
		}
	}
	return out, nil
}

// replayProbe runs the unmeasured round and replayRounds measured ones.
func replayProbe(ctx context.Context, e *env) (map[int][]probeRun, error) {
	sum := map[int][]probeRun{}
	for _, n := range probeGoroutines {
		sum[n] = make([]probeRun, nReplayShapes)
	}
	for round := range replayRounds + 1 {
		r, err := replayRound(ctx, e, round)
		if err != nil {
			return nil, fmt.Errorf("replay round %d: %w", round, err)
		}
		if round == 0 {
			continue
		}
		for _, n := range probeGoroutines {
			for shape := range nReplayShapes {
				sum[n][shape].add(r[n][shape])
			}
		}
	}
	return sum, nil
}

func printReplay(out io.Writer, runs map[int][]probeRun) {
	fmt.Fprintf(out, "\n== the workload, builds of %d units, %d rounds pooled after one unmeasured ==\n", replayUnits, replayRounds)
	fmt.Fprintln(out, "  hopper: the library; script: EVALSHA; writes: the library's commits, captured from a drain of the same")
	fmt.Fprintln(out, "  build by one worker, each sent in one DoMulti on the shared connection with no read and no fence;")
	fmt.Fprintln(out, "  one RT: the same, behind the acting worker's version fence. Every drain is checked as make bench checks it.")
	printShapes(out, "transitions", replayShapeNames[:], replayScript, runs)
}
