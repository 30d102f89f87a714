package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// ttl is the inactivity TTL every transition renews, on both sides.
const ttl = 600 * time.Second

var ttlArg = strconv.FormatInt(ttl.Milliseconds(), 10)

// The modes of the workload, indexes into per-mode counters.
const (
	modeAccount = iota
	modeHeartbeat
	modeFinalize
	modeRequeue
	nModes
)

var modeNames = [nModes]string{queue.ModeDeliveryAccounting, queue.ModeHeartbeat, queue.ModeFinalize, queue.ModeRequeue}

// The attempt's result, the same on both sides.
var (
	durationMS     = 1234.0
	durationArg    = "1234"
	failureSummary = "1 example, 1 failure"
	errorsPayload  = events.EncodeErrors([]events.ErrorEntry{{
		ExampleID: "./spec/models/unit_spec.rb[1:1]", Description: "Unit works", Class: "RSpec::Expectations::ExpectationNotMetError",
		Message:   "expected: 1\n     got: 2",
		Backtrace: []string{"./spec/models/unit_spec.rb:5:in `block (2 levels) in <top (required)>'"},
	}})
)

// build is one published build of the workload.
type build struct {
	id      string
	keys    queue.Keys
	units   []string
	requeue map[string]bool // units whose first attempt is requeued
}

func (b *build) scriptKeys() []string {
	k := b.keys
	return []string{k.Units, k.Priority, k.Attempts, k.Meta, k.UnitState, k.Workers}
}

// expected counts what draining the build does: every unit accounted,
// heartbeated and finalized once, and the requeued ones accounted and
// heartbeated once more, plus their requeue.
func (b *build) expected() (byMode [nModes]int64) {
	n, r := int64(len(b.units)), int64(len(b.requeue))
	return [nModes]int64{n + r, n + r, n, r}
}

// publish lays a build out the way the reference publisher leaves it (as
// integration/fixture_test.go does): both streams with group "workers" at 0,
// one entry per unit, zeroed unit_state, and meta in state ready with the
// budgets frozen: max_requeues 1 and a tolerance of 1, so that every
// requeue succeeds and every retry finalizes.
func publish(ctx context.Context, admin rueidis.Client, id string, n int) (*build, error) {
	b := &build{id: id, keys: queue.BuildKeys(id), requeue: map[string]bool{}}
	k := b.keys
	cmds := rueidis.Commands{
		admin.B().XgroupCreate().Key(k.Units).Group(queue.Group).Id("0").Mkstream().Build(),
		admin.B().XgroupCreate().Key(k.Priority).Group(queue.Group).Id("0").Mkstream().Build(),
	}
	for i := range n {
		u := fmt.Sprintf("spec/models/unit_%05d_spec.rb", i)
		b.units = append(b.units, u)
		if i%10 == 0 {
			b.requeue[u] = true
		}
		cmds = append(cmds,
			admin.B().Xadd().Key(k.Units).Id("*").FieldValue().FieldValue("id", u).FieldValue("type", "file").Build(),
			admin.B().Hset().Key(k.UnitState).FieldValue().FieldValue(u, `{"retry_index":0,"reclaim_count":0,"entered_retry":false}`).Build(),
		)
	}
	cmds = append(cmds, admin.B().Hset().Key(k.Meta).FieldValue().
		FieldValue("total_units", strconv.Itoa(n)).FieldValue("unit_type", "file").FieldValue("state", "ready").
		FieldValue("ready_at", "1").FieldValue("finalized_count", "0").FieldValue("requeued_units_count", "0").
		FieldValue("max_requeues", "1").FieldValue("requeue_tolerance", "1").FieldValue("max_reclaims", "3").
		// The mark hopper's publisher leaves, which Transition requires
		// (queue/guarded_mark.go); the script ignores it. Both sides get it.
		FieldValue("guarded", "1").Build())
	for _, key := range b.scriptKeys() {
		cmds = append(cmds, admin.B().Pexpire().Key(key).Milliseconds(ttl.Milliseconds()).Build())
	}
	for _, r := range admin.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return nil, fmt.Errorf("publishing build %s: %w", id, err)
		}
	}
	return b, nil
}

// check verifies that the build drained as the workload says: every unit
// finalized once, the chosen tenth requeued, and one event per transition
// but the heartbeats. A failure here is a correctness failure of the side,
// not noise.
func (b *build) check(ctx context.Context, admin rueidis.Client) error {
	meta, err := admin.Do(ctx, admin.B().Hmget().Key(b.keys.Meta).Field("finalized_count", "requeued_units_count").Build()).AsStrSlice()
	if err != nil {
		return err
	}
	want := b.expected()
	if meta[0] != strconv.Itoa(len(b.units)) || meta[1] != strconv.Itoa(len(b.requeue)) {
		return fmt.Errorf("build %s: finalized_count %s, requeued_units_count %s; want %d, %d", b.id, meta[0], meta[1], len(b.units), len(b.requeue))
	}
	n, err := admin.Do(ctx, admin.B().Xlen().Key(b.keys.Attempts).Build()).AsInt64()
	if err != nil {
		return err
	}
	if events := want[modeAccount] + want[modeFinalize] + want[modeRequeue]; n != events {
		return fmt.Errorf("build %s: %d events in the attempt log, want %d", b.id, n, events)
	}
	for _, s := range []string{b.keys.Units, b.keys.Priority} {
		p, err := admin.Do(ctx, admin.B().Xpending().Key(s).Group(queue.Group).Build()).ToArray()
		if err != nil {
			return err
		}
		if c, _ := p[0].AsInt64(); c != 0 {
			return fmt.Errorf("build %s: %d entries still pending on %s", b.id, c, s)
		}
	}
	return nil
}

// entry is one stream entry a worker read.
type entry struct {
	stream queue.Stream
	id     string
	unit   string
	typ    string
}

// reserve reads one new entry for worker with a plain XREADGROUP, priority
// stream first, then units, never blocking: the reference workers' read.
func reserve(ctx context.Context, c rueidis.Client, b *build, worker string) (entry, bool, error) {
	for _, s := range [2]queue.Stream{queue.StreamPriority, queue.StreamUnits} {
		key := b.keys.Units
		if s == queue.StreamPriority {
			key = b.keys.Priority
		}
		res, err := c.Do(ctx, c.B().Xreadgroup().Group(queue.Group, worker).Count(1).Streams().Key(key).Id(">").Build()).AsXRead()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return entry{}, false, fmt.Errorf("XREADGROUP %s: %w", s, err)
		}
		for _, list := range res {
			if len(list) > 0 {
				x := list[0]
				return entry{stream: s, id: x.ID, unit: x.FieldValues["id"], typ: x.FieldValues["type"]}, true, nil
			}
		}
	}
	return entry{}, false, nil
}

// side runs the workload's four transitions on one build.
type side interface {
	account(ctx context.Context, worker string, x entry) (queue.Reservation, error)
	heartbeat(ctx context.Context, r queue.Reservation) error
	finalize(ctx context.Context, r queue.Reservation) error
	// requeue must put the unit back: the budgets always allow it.
	requeue(ctx context.Context, r queue.Reservation) error
}

// ours runs the transitions through queue's typed API.
type ours struct{ b *queue.Build }

func (o ours) account(ctx context.Context, worker string, x entry) (queue.Reservation, error) {
	d, err := o.b.AccountDelivery(ctx, worker, x.stream, x.id, x.unit)
	if err != nil {
		return queue.Reservation{}, err
	}
	return queue.Reservation{
		WorkerID: worker, Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ,
		DeliveryCount: d.DeliveryCount, RetryIndex: d.RetryIndex, ReclaimCount: d.ReclaimCount,
	}, nil
}

func (o ours) heartbeat(ctx context.Context, r queue.Reservation) error { return o.b.Heartbeat(ctx, r) }

func (o ours) finalize(ctx context.Context, r queue.Reservation) error {
	return o.b.Finalize(ctx, r, queue.Result{Outcome: events.OutcomePassed, DurationMS: durationMS})
}

func (o ours) requeue(ctx context.Context, r queue.Reservation) error {
	q, err := o.b.Requeue(ctx, r,
		queue.Result{DurationMS: durationMS, FailureSummary: failureSummary, Errors: errorsPayload},
		queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1, MaxReclaims: 3})
	if err == nil && !q.Requeued {
		err = fmt.Errorf("unit %s was finalized, not requeued", r.UnitID)
	}
	return err
}

// errStatus is a script or Transition reply other than the one the
// workload expects.
var errStatus = errors.New("unexpected status")

// reserver is a side that reserves and accounts in one call of its own
// API: ours in the harness, through ReserveBatch (by default with
// read-ahead, queue/read_ahead.go: its reads go behind the previous
// settlement's EXEC). The other sides read with reserve, then account.
type reserver interface {
	reserveAccounted(ctx context.Context, worker string) (queue.Reservation, bool, error)
}

// reserveMode is how the harness's typed side reserves
// (HOPPER_BENCH_RESERVE): "ahead" (default), ReserveBatch with read-ahead;
// "batch", ReserveBatch without; "plain", reserve's XREADGROUPs, as the
// script's side.
var reserveMode = cmp.Or(os.Getenv("HOPPER_BENCH_RESERVE"), "ahead")

// reserving is ours, reserving through ReserveBatch on opts: a 1 ms wait
// on an empty units stream ends the drain as reserve's read without
// waiting does.
type reserving struct {
	ours
	opts queue.ReserveOptions
}

// typedSide is ours on qb, reserving as reserveMode says.
func typedSide(qb *queue.Build) side {
	if reserveMode == "plain" {
		return ours{qb}
	}
	return reserving{ours{qb}, queue.ReserveOptions{Block: time.Millisecond, ReadAhead: reserveMode == "ahead"}}
}

func (o reserving) reserveAccounted(ctx context.Context, worker string) (queue.Reservation, bool, error) {
	rs, err := o.b.ReserveBatch(ctx, worker, 1, o.opts)
	if err != nil || len(rs) == 0 {
		return queue.Reservation{}, false, err
	}
	return rs[0], true, nil
}

// take reserves w's next unit on s and accounts for it; its time and
// round trips count as the accounting's (for ours, the reservation's reads
// included). ok false: both streams were empty.
func (w *worker) take(ctx context.Context, reader rueidis.Client, b *build, s side, tr *modeTracker) (queue.Reservation, bool, error) {
	if rv, ok := s.(reserver); ok {
		tr.set(modeAccount)
		t := time.Now()
		r, ok, err := rv.reserveAccounted(ctx, w.id)
		if ok {
			w.lat[modeAccount] = append(w.lat[modeAccount], time.Since(t))
		}
		if err != nil {
			err = fmt.Errorf("%s: reserve: %w", modeNames[modeAccount], err)
		}
		return r, ok, err
	}
	tr.set(-1)
	x, ok, err := reserve(ctx, reader, b, w.id)
	if err != nil || !ok {
		return queue.Reservation{}, false, err
	}
	tr.set(modeAccount)
	t := time.Now()
	r, err := s.account(ctx, w.id, x)
	w.lat[modeAccount] = append(w.lat[modeAccount], time.Since(t))
	if err != nil {
		return r, false, fmt.Errorf("%s: %s %s: %w", modeNames[modeAccount], x.stream, x.id, err)
	}
	return r, true, nil
}

// worker is one goroutine of a drain, with its own worker id.
type worker struct {
	id  string
	lat [nModes][]time.Duration // per transition, client side
	// settled is when its last settlement returned: the drain's clock
	// stops at the build's last, not at the empty reads after it (a
	// ReserveBatch's wait on an empty units stream ends on the server's
	// timer, up to 100 ms late).
	settled time.Time
}

func newWorker(id string, capacity int) *worker {
	w := &worker{id: id}
	for m := range w.lat {
		w.lat[m] = make([]time.Duration, 0, capacity)
	}
	return w
}

// drain runs the workload until both streams are empty when read: reserve,
// account, heartbeat, then finalize, or requeue the chosen tenth on its first
// attempt. A worker that requeues reads the priority stream again before it
// can stop, so every requeued entry is taken by someone.
func (w *worker) drain(ctx context.Context, reader rueidis.Client, b *build, s side, tr *modeTracker) error {
	for ctx.Err() == nil {
		r, ok, err := w.take(ctx, reader, b, s, tr)
		if err != nil || !ok {
			return err
		}
		tr.set(modeHeartbeat)
		t := time.Now()
		err = s.heartbeat(ctx, r)
		w.lat[modeHeartbeat] = append(w.lat[modeHeartbeat], time.Since(t))
		if err != nil {
			return fmt.Errorf("%s: %s: %w", modeNames[modeHeartbeat], r.UnitID, err)
		}
		m := modeFinalize
		if r.RetryIndex == 0 && b.requeue[r.UnitID] {
			m = modeRequeue
		}
		tr.set(m)
		t = time.Now()
		if m == modeRequeue {
			err = s.requeue(ctx, r)
		} else {
			err = s.finalize(ctx, r)
		}
		w.settled = time.Now()
		w.lat[m] = append(w.lat[m], w.settled.Sub(t))
		if err != nil {
			return fmt.Errorf("%s: %s: %w", modeNames[m], r.UnitID, err)
		}
	}
	return ctx.Err()
}
