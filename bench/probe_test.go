package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// The one-round-trip probe (`make bench-probe`) measures a design hopper does
// not have, so that whether to build it can be decided on numbers: a fenced
// transition sent whole in one round trip on the shared, auto-pipelined
// connection, where its writes share the socket work of every other
// worker's, as the script's EVALSHAs do. It needs no reads before it
// decides: each guard is a sorted set scored by a version, and the pipeline
// watches the guards with a scratch key that ZRANGESTORE writes, aborting the
// EXEC, only when a guard holds a member scored past the version the client
// expects. The writes are a lone heartbeat's. It runs heartbeats alone: the
// transition in which the script does least of its own work, so the one whose
// ratios favour a script-free design least; the harness's workload also
// carries the reserves' reads, which cost both sides the same. It first
// checks that the pipeline commits when its guard is where it expects and
// writes nothing when the guard moved.

// probeShape is one way to send a heartbeat.
type probeShape int

const (
	probeHopper probeShape = iota // queue.Build.Heartbeat: two round trips on a dedicated connection
	probeScript                   // the reference script's heartbeat, EVALSHA on the shared connection
	probeOneRT                    // oneRTHeartbeat on the shared connection
	probeWrites                   // its MULTI...EXEC alone, unfenced: what no design sending these writes in a round trip of their own can beat
	nProbeShapes
)

var probeShapeNames = [nProbeShapes]string{"hopper", "script", "one RT", "writes"}

// probeGoroutines are the worker counts the probe runs: the ones where
// hopper's throughput misses 1.5 times the script's.
var probeGoroutines = []int{1, 8, 32}

const (
	probeHeartbeats = 6000 // measured per shape, goroutine count and round
	probeWarm       = 600  // unmeasured, first
	probeRounds     = 3
)

// oneRTHeartbeat is a worker's heartbeat in one round trip: the guard keys
// are its own (the design would replace the library's guards with them), the
// writes those of queue's lone heartbeat, the worker record's last_seen the
// client's clock (the design would carry the server's time forward from its
// last TIME reply).
type oneRTHeartbeat struct {
	b                                    *build
	r                                    queue.Reservation
	version, scratch, worker, entryGuard string
}

func newOneRTHeartbeat(b *build, r queue.Reservation) oneRTHeartbeat {
	key := func(kind string) string { return "{" + b.id + "}:probe:" + kind + ":" + r.WorkerID }
	return oneRTHeartbeat{b: b, r: r, version: key("version"), scratch: key("scratch"), worker: key("worker"), entryGuard: key("entry")}
}

// versionFence appends what makes the EXEC after it abort when the version
// guard holds a member scored past 1: the guards and a scratch key watched,
// and a ZRANGESTORE into the scratch key of the members past 1, which writes
// it only when there are some.
func versionFence(c rueidis.Client, cmds rueidis.Commands, version, scratch string, guards ...string) rueidis.Commands {
	return append(cmds,
		// The scratch key must be missing: ZRANGESTORE deletes an existing
		// destination when its range is empty, and that write would abort.
		c.B().Del().Key(scratch).Build(),
		c.B().Watch().Key(append(guards, scratch)...).Build(),
		c.B().Zrangestore().Dst(scratch).Src(version).Min("(1").Max("+inf").Byscore().Limit(0, 1).Build(),
	)
}

// errProbeAborted is an EXEC that did not run: a guard moved.
var errProbeAborted = errors.New("one-round-trip heartbeat aborted")

// setVersion scores the version guard's only member at v.
func (h oneRTHeartbeat) setVersion(ctx context.Context, c rueidis.Client, v float64) error {
	return c.Do(ctx, c.B().Zadd().Key(h.version).ScoreMember().ScoreMember(v, "v").Build()).Error()
}

// send is the whole transition, one DoMulti: rueidis queues its commands as
// one unit, so no other goroutine's command comes between the WATCH and the
// EXEC on the shared connection.
//
// With fenced false it sends the MULTI...EXEC alone: no WATCH, no guard.
func (h oneRTHeartbeat) send(ctx context.Context, c rueidis.Client, seq int, fenced bool) error {
	r, k := h.r, h.b.keys
	token := r.WorkerID + ":" + strconv.Itoa(seq)
	rec := `{"last_seen":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `,"current_unit":"` + r.UnitID + `","processed":0}`
	stream := k.Units
	if r.Stream == queue.StreamPriority {
		stream = k.Priority
	}
	cmds := make(rueidis.Commands, 0, 16)
	if fenced {
		cmds = versionFence(c, cmds, h.version, h.scratch, h.worker, h.entryGuard)
	}
	queued := len(cmds)
	cmds = append(cmds,
		c.B().Multi().Build(),
		c.B().Xclaim().Key(stream).Group(queue.Group).Consumer(r.WorkerID).MinIdleTime("0").Id(r.EntryID).
			Retrycount(r.DeliveryCount).Justid().Build(),
		c.B().Arbitrary("SET").Keys(h.entryGuard).Args(token, "PX", ttlArg).Build(),
		c.B().Hset().Key(k.Workers).FieldValue().FieldValue(r.WorkerID, rec).Build(),
	)
	for _, key := range h.b.scriptKeys() {
		cmds = append(cmds, c.B().Arbitrary("PEXPIRE").Keys(key).Args(ttlArg).Build())
	}
	cmds = append(cmds, c.B().Lpush().Key(h.worker).Element(token).Build(), c.B().Exec().Build())
	res := c.DoMulti(ctx, cmds...)
	for i, x := range res[:len(res)-1] {
		if err := x.Error(); err != nil {
			return fmt.Errorf("one-round-trip heartbeat, command %d: %w", i, err)
		}
	}
	replies, err := res[len(res)-1].ToArray()
	if rueidis.IsRedisNil(err) {
		return errProbeAborted
	}
	if err != nil {
		return fmt.Errorf("one-round-trip heartbeat, EXEC: %w", err)
	}
	if want := len(cmds) - queued - 2; len(replies) != want {
		return fmt.Errorf("one-round-trip heartbeat, EXEC: %d replies, want %d", len(replies), want)
	}
	return nil
}

// checkOneRTFence shows that the probe measures a fenced transition: with
// its version guard where it expects, the heartbeat commits; with the guard
// moved past it, the EXEC aborts and the worker's record, its guard and the
// entry guard are as they were.
func checkOneRTFence(ctx context.Context, c rueidis.Client, h oneRTHeartbeat) error {
	if err := h.setVersion(ctx, c, 1); err != nil {
		return err
	}
	if err := h.send(ctx, c, 0, true); err != nil {
		return fmt.Errorf("guard unmoved: %w", err)
	}
	snapshot := func() ([3]string, error) {
		res := c.DoMulti(ctx,
			c.B().Hget().Key(h.b.keys.Workers).Field(h.r.WorkerID).Build(),
			c.B().Lindex().Key(h.worker).Index(0).Build(),
			c.B().Get().Key(h.entryGuard).Build(),
		)
		var s [3]string
		for i, x := range res {
			v, err := x.ToString()
			if err != nil {
				return s, err
			}
			s[i] = v
		}
		return s, nil
	}
	before, err := snapshot()
	if err != nil {
		return fmt.Errorf("after the commit: %w", err)
	}
	if before[1] != h.r.WorkerID+":0" || before[2] != h.r.WorkerID+":0" {
		return fmt.Errorf("the commit left tokens %q and %q, want %q", before[1], before[2], h.r.WorkerID+":0")
	}
	if err := h.setVersion(ctx, c, 2); err != nil {
		return err
	}
	time.Sleep(2 * time.Millisecond) // a new last_seen, were the record written
	if err := h.send(ctx, c, 1, true); !errors.Is(err, errProbeAborted) {
		return fmt.Errorf("guard moved: got %v, want the EXEC aborted", err)
	}
	after, err := snapshot()
	if err != nil {
		return fmt.Errorf("after the abort: %w", err)
	}
	if after != before {
		return fmt.Errorf("the aborted heartbeat wrote: %q became %q", before, after)
	}
	return h.setVersion(ctx, c, 1)
}

// probeRun is what one shape did at one goroutine count (heartbeats, or
// the replay's transitions), summed over rounds.
type probeRun struct {
	count            int
	wall             time.Duration
	serverS, clientS float64 // CPU seconds
}

func (p probeRun) perSecond() float64 { return float64(p.count) / p.wall.Seconds() }
func (p probeRun) serverUS() float64  { return p.serverS * 1e6 / float64(p.count) }
func (p probeRun) clientUS() float64  { return p.clientS * 1e6 / float64(p.count) }

func (p *probeRun) add(q probeRun) {
	p.count += q.count
	p.wall += q.wall
	p.serverS += q.serverS
	p.clientS += q.clientS
}

// timed runs fn and measures it: wall time, and the server's and this
// process's CPU.
func timed(ctx context.Context, admin rueidis.Client, count int, fn func() error) (probeRun, error) {
	srv0, err := serverCPU(ctx, admin)
	if err != nil {
		return probeRun{}, err
	}
	cl0, start := processCPU(), time.Now()
	if err := fn(); err != nil {
		return probeRun{}, err
	}
	wall, cl1 := time.Since(start), processCPU()
	srv1, err := serverCPU(ctx, admin)
	if err != nil {
		return probeRun{}, err
	}
	return probeRun{count: count, wall: wall, serverS: srv1 - srv0, clientS: cl1 - cl0}, nil
}

// probeRound publishes a build of n units, gives each of n workers one of
// them (reserved and accounted on the shape's side), and times probeHeartbeats
// heartbeats shared among the workers, after probeWarm unmeasured ones.
func probeRound(ctx context.Context, e *env, shape probeShape, n, round int) (probeRun, error) {
	if err := e.admin.Do(ctx, e.admin.B().Flushall().Build()).Error(); err != nil {
		return probeRun{}, err
	}
	b, err := publish(ctx, e.admin, fmt.Sprintf("probe-%d-%d-%d", shape, n, round), n)
	if err != nil {
		return probeRun{}, err
	}
	qb, err := queue.Open(e.ours, b.id, queue.Options{TTL: ttl})
	if err != nil {
		return probeRun{}, err
	}
	var s side = ours{qb}
	client := e.ours
	if shape == probeScript {
		s, client = scriptSide(e.script, e.sha, b.scriptKeys()), e.script
	}
	beats := make([]func(seq int) error, n)
	for i := range n {
		w := fmt.Sprintf("w%d", i)
		x, ok, err := reserve(ctx, client, b, w)
		if err != nil {
			return probeRun{}, err
		}
		if !ok {
			return probeRun{}, fmt.Errorf("worker %s found no unit", w)
		}
		r, err := s.account(ctx, w, x)
		if err != nil {
			return probeRun{}, err
		}
		switch shape {
		case probeOneRT, probeWrites:
			h := newOneRTHeartbeat(b, r)
			if err := checkOneRTFence(ctx, client, h); err != nil {
				return probeRun{}, fmt.Errorf("the one-round-trip heartbeat is not fenced: %w", err)
			}
			fenced := shape == probeOneRT
			beats[i] = func(seq int) error { return h.send(ctx, client, seq+2, fenced) }
		default:
			beats[i] = func(int) error { return s.heartbeat(ctx, r) }
		}
	}
	beatAll := func(total int) error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				for seq := range total / n {
					if err := beats[i](seq); err != nil {
						errs[i] = err
						return
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := beatAll(probeWarm); err != nil {
		return probeRun{}, err
	}
	return timed(ctx, e.admin, probeHeartbeats/n*n, func() error { return beatAll(probeHeartbeats) })
}

// TestOneRoundTripProbe is `make bench-probe`: the shapes alternate within
// each round, as the harness's sides do.
func TestOneRoundTripProbe(t *testing.T) {
	if os.Getenv("HOPPER_BENCH") == "" || os.Getenv("HOPPER_BENCH_PROBE") == "" {
		t.Skip("the one-round-trip probe runs with HOPPER_BENCH=1 HOPPER_BENCH_PROBE=1 (make bench-probe)")
	}
	path := os.Getenv("HOPPER_REFERENCE_SCRIPT")
	if path == "" {
		t.Fatal("the probe compares with the reference script: set HOPPER_REFERENCE_SCRIPT to transition.lua")
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the reference script: %v", err)
	}
	ctx := context.Background()
	e := &env{admin: srv.AdminClient(t), ours: srv.Client(t), script: srv.AdminClient(t)}
	network := "mapped port (docker-proxy)"
	if addr, err := srv.BridgeAddr(ctx); err == nil {
		e.ours, e.script = srv.ClientAt(t, addr, false), srv.ClientAt(t, addr, true)
		network = "bridge network " + addr
	}
	if e.sha, err = e.admin.Do(ctx, e.admin.B().ScriptLoad().Script(string(src)).Build()).ToString(); err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	runs := map[int][]probeRun{}
	for _, n := range probeGoroutines {
		runs[n] = make([]probeRun, nProbeShapes)
		for round := range probeRounds {
			for shape := range nProbeShapes {
				p, err := probeRound(ctx, e, shape, n, round)
				if err != nil {
					t.Fatalf("%s, %d goroutines, round %d: %v", probeShapeNames[shape], n, round+1, err)
				}
				t.Logf("%-6s %2d goroutines round %d: %.0f heartbeats/s", probeShapeNames[shape], n, round+1, p.perSecond())
				runs[n][shape].add(p)
			}
		}
	}
	printProbe(os.Stdout, network, runs)
	whole, err := replayProbe(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	printReplay(os.Stdout, whole)
}

func printProbe(out io.Writer, network string, runs map[int][]probeRun) {
	fmt.Fprintf(out, "\n== one-round-trip probe: heartbeats alone, %d per round after %d unmeasured, %d rounds pooled; %s ==\n",
		probeHeartbeats, probeWarm, probeRounds, network)
	fmt.Fprintln(out, "  hopper: Build.Heartbeat, two round trips on a dedicated connection; script: EVALSHA heartbeat;")
	fmt.Fprintln(out, "  one RT: the same writes as hopper's, fenced by a version guard, one DoMulti on the shared connection;")
	fmt.Fprintln(out, "  writes: one RT's MULTI...EXEC alone, unfenced (no design that sends these writes in a round trip")
	fmt.Fprintln(out, "  of their own can beat it)")
	printShapes(out, "heartbeats", probeShapeNames[:], int(probeScript), runs)
}

// printShapes prints a row per worker count and shape, with its ratios to
// the script's row at the same count; what counts what was done.
func printShapes(out io.Writer, what string, names []string, script int, runs map[int][]probeRun) {
	fmt.Fprintf(out, "  %7s  %-8s %14s %14s %17s %10s %14s\n", "workers", "shape", what+"/s",
		"srv cpu us/op", "client cpu us/op", "vs script", "srv vs script")
	for _, n := range probeGoroutines {
		r := runs[n]
		for shape, p := range r {
			fmt.Fprintf(out, "  %7d  %-8s %14.0f %14.1f %17.1f %9.2fx %13.2fx\n", n, names[shape], p.perSecond(), p.serverUS(),
				p.clientUS(), p.perSecond()/r[script].perSecond(), p.serverUS()/r[script].serverUS())
		}
	}
}
