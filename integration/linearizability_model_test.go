package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file holds what the linearizability tests share: a recorder of
// concurrent transitions (call and return times, arguments, replies), a
// sequential model of the transitions' semantics for porcupine, and a
// stress driver of goroutine workers moving ownership around one build.
//
// The model is per unit (porcupine checks each unit's history apart, which
// keeps the search small): a unit has one entry in the units stream, and one
// more in the priority stream per requeue; each entry is undelivered,
// pending (with an owner and a delivery count) or acknowledged; the unit
// has its retry index, its reclaim count and whether it is finalized.
// Operations: the plain XREADGROUP that delivers an entry, then the
// transitions with their replies. Idle time is not in the model: which
// entry a reclaim takes is the server's choice, so a reclaim's reply is
// checked for consistency instead: the entry it claimed (or finalized) must
// have been pending, with the owner the reply names, at its linearization
// point, and the counters must be the ones that follow. A reclaim that
// found nothing constrains nothing and is left out, as are liveness calls.
//
// A call that failed without being applied (an error other than the
// transition's own STALE) is a step that changes nothing: a history where
// such a call was applied after all is not linearizable.

// linKind is an operation of the model.
type linKind uint8

const (
	opRead      linKind = iota // XREADGROUP delivering an entry
	opAccount                  // delivery_accounting
	opHeartbeat                // heartbeat
	opAbandon                  // abandoned
	opFinalize                 // finalize
	opRequeue                  // requeue
	opReclaim                  // reclaim that took or finalized an entry
)

var linKindNames = [...]string{"read", "account", "heartbeat", "abandon", "finalize", "requeue", "reclaim"}

func (k linKind) String() string { return linKindNames[k] }

// linInput is an operation's arguments.
type linInput struct {
	Kind    linKind
	Worker  string
	Unit    string // the partition (for a reclaim: the unit its reply names)
	Initial string // the unit's entry in the units stream, as published
	Stream  queue.Stream
	Entry   string
	DC      int64 // the reservation's delivery count (fenced operations)
}

// linStatus is what an operation replied.
type linStatus uint8

const (
	stOK         linStatus = iota // applied (read: delivered the entry)
	stStale                       // STALE: refused, nothing written
	stNotApplied                  // failed before anything was applied
	stRequeued                    // requeue: REQUEUED
	stFinalized                   // requeue or reclaim: FINALIZED (budget spent)
	stTaken                       // reclaim: took the entry
)

var linStatusNames = [...]string{"OK", "STALE", "not applied", "REQUEUED", "FINALIZED", "TAKEN"}

func (s linStatus) String() string { return linStatusNames[s] }

// linOutput is an operation's reply.
type linOutput struct {
	Status             linStatus
	DC, Retry, Reclaim int64        // account OK, reclaim TAKEN; requeue: retry index after
	Stream             queue.Stream // reclaim TAKEN
	Entry              string       // reclaim TAKEN
	NewEntry           string       // requeue REQUEUED
	Prev               string       // reclaim: previous owner, when known
	Err                string       // stNotApplied: the error
}

// Entry states in the model.
const (
	undelivered uint8 = iota
	pendingEntry
	acked
)

const maxLinEntries = 6 // one units entry + one per requeue (max_requeues < 6)

type linEntry struct {
	stream queue.Stream
	id     string
	state  uint8
	owner  string
	dc     int64
}

// linUnit is one unit's state in the model; a value, copied by each step.
type linUnit struct {
	entries   [maxLinEntries]linEntry
	n         int
	retry     int64
	reclaims  int64
	finalized bool
}

func (u linUnit) find(s queue.Stream, id string) int {
	for i := range u.n {
		if u.entries[i].stream == s && u.entries[i].id == id {
			return i
		}
	}
	return -1
}

// pendingEntry returns the unit's pending entry: there is at most one.
func (u linUnit) pending() int {
	for i := range u.n {
		if u.entries[i].state == pendingEntry {
			return i
		}
	}
	return -1
}

// holds is fence.Holds in the model: pending, owned by worker, and at dc
// unless dc is 0.
func (u linUnit) holds(i int, worker string, dc int64) bool {
	if i < 0 {
		return false
	}
	e := u.entries[i]
	return e.state == pendingEntry && e.owner == worker && (dc == 0 || e.dc == dc)
}

// linBudgets are the build's frozen caps the model decides with (the
// requeue tolerance is 1: it never limits, and keeps units independent).
type linBudgets struct {
	maxRequeues, maxReclaims int64
}

func (b linBudgets) step(u linUnit, in linInput, out linOutput) (bool, linUnit) {
	if u.n == 0 {
		u.entries[0] = linEntry{stream: queue.StreamUnits, id: in.Initial}
		u.n = 1
	}
	if out.Status == stNotApplied {
		return true, u
	}
	i := u.find(in.Stream, in.Entry)
	switch in.Kind {
	case opRead:
		if out.Status != stOK || i < 0 || u.entries[i].state != undelivered {
			return false, u
		}
		u.entries[i].state, u.entries[i].owner, u.entries[i].dc = pendingEntry, in.Worker, 1
		return true, u
	case opAccount:
		if !u.holds(i, in.Worker, 0) {
			return out.Status == stStale, u
		}
		return out.Status == stOK && out.DC == u.entries[i].dc && out.Retry == u.retry && out.Reclaim == u.reclaims, u
	case opHeartbeat, opAbandon:
		if !u.holds(i, in.Worker, in.DC) {
			return out.Status == stStale, u
		}
		return out.Status == stOK, u
	case opFinalize:
		if !u.holds(i, in.Worker, in.DC) {
			return out.Status == stStale, u
		}
		if out.Status != stOK || u.finalized {
			return false, u
		}
		u.entries[i].state, u.finalized = acked, true
		return true, u
	case opRequeue:
		if !u.holds(i, in.Worker, in.DC) {
			return out.Status == stStale, u
		}
		if u.finalized {
			return false, u
		}
		u.entries[i].state = acked
		if u.retry+1 > b.maxRequeues {
			u.finalized = true
			return out.Status == stFinalized && out.Retry == u.retry, u
		}
		if out.Status != stRequeued || out.Retry != u.retry+1 || out.NewEntry == "" ||
			u.find(queue.StreamPriority, out.NewEntry) >= 0 || u.n == maxLinEntries {
			return false, u
		}
		u.retry++
		u.entries[u.n] = linEntry{stream: queue.StreamPriority, id: out.NewEntry}
		u.n++
		return true, u
	case opReclaim:
		switch out.Status {
		case stTaken:
			i = u.find(out.Stream, out.Entry)
		case stFinalized:
			i = u.pending()
		default:
			return false, u
		}
		if i < 0 || u.entries[i].state != pendingEntry || u.finalized {
			return false, u
		}
		if out.Prev != "" && u.entries[i].owner != out.Prev {
			return false, u
		}
		if u.reclaims+1 > b.maxReclaims {
			if out.Status != stFinalized {
				return false, u
			}
			u.entries[i].state, u.finalized = acked, true
			return true, u
		}
		if out.Status != stTaken || out.DC != u.entries[i].dc+1 || out.Retry != u.retry || out.Reclaim != u.reclaims+1 {
			return false, u
		}
		u.entries[i].owner, u.entries[i].dc = in.Worker, out.DC
		u.reclaims++
		return true, u
	}
	return false, u
}

// model is the porcupine model, partitioned by unit.
func (b linBudgets) model() porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byUnit := map[string][]porcupine.Operation{}
			var units []string
			for _, op := range history {
				u := op.Input.(linInput).Unit
				if _, ok := byUnit[u]; !ok {
					units = append(units, u)
				}
				byUnit[u] = append(byUnit[u], op)
			}
			out := make([][]porcupine.Operation, 0, len(units))
			for _, u := range units {
				out = append(out, byUnit[u])
			}
			return out
		},
		Init: func() any { return linUnit{} },
		Step: func(state, input, output any) (bool, any) {
			return b.step(state.(linUnit), input.(linInput), output.(linOutput))
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(linInput), output.(linOutput)
			s := fmt.Sprintf("%s %s %s/%s dc=%d -> %s", in.Kind, in.Worker, in.Stream, in.Entry, in.DC, out.Status)
			switch {
			case out.Status == stTaken:
				s += fmt.Sprintf(" %s/%s dc=%d retry=%d reclaim=%d from %q", out.Stream, out.Entry, out.DC, out.Retry, out.Reclaim, out.Prev)
			case in.Kind == opAccount && out.Status == stOK:
				s += fmt.Sprintf(" dc=%d retry=%d reclaim=%d", out.DC, out.Retry, out.Reclaim)
			case out.Status == stRequeued:
				s += fmt.Sprintf(" retry=%d new=%s", out.Retry, out.NewEntry)
			case out.Status == stNotApplied:
				s += " (" + out.Err + ")"
			}
			return s
		},
		DescribeState: func(state any) string {
			u := state.(linUnit)
			var b strings.Builder
			fmt.Fprintf(&b, "retry=%d reclaims=%d finalized=%v", u.retry, u.reclaims, u.finalized)
			for _, e := range u.entries[:u.n] {
				fmt.Fprintf(&b, " | %s/%s %s %s dc=%d", e.stream, e.id, [...]string{"undelivered", "pending", "acked"}[e.state], e.owner, e.dc)
			}
			return b.String()
		},
	}
}

// linRecorder records a history of operations. Safe for concurrent use.
type linRecorder struct {
	start   time.Time
	initial map[string]string // unit -> its units-stream entry
	mu      sync.Mutex
	ops     []porcupine.Operation
	seq     []linCall // every recorded call, for the log comparison
	unknown atomic.Int64
}

// linCall is one recorded call of a worker's main goroutine.
type linCall struct {
	in   linInput
	out  linOutput
	call int64
}

func newLinRecorder(initial map[string]string) *linRecorder {
	return &linRecorder{start: time.Now(), initial: initial}
}

func (r *linRecorder) now() int64 { return int64(time.Since(r.start)) }

// add records one operation of client (a goroutine) between call and ret.
// main tells a worker's main goroutine, whose calls are sequential and are
// compared with the log.
func (r *linRecorder) add(client int, in linInput, out linOutput, call, ret int64, main bool) {
	in.Initial = r.initial[in.Unit]
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
	if main {
		r.seq = append(r.seq, linCall{in: in, out: out, call: call})
	}
}

func (r *linRecorder) history() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// linOutcome classifies a transition's error. fatal errors (a reply lost
// for good, a commit applied in part) are what the transitions promise
// never to return while Redis can be reached.
func linOutcome(err error) (st linStatus, fatal error) {
	switch {
	case err == nil:
		return stOK, nil
	case errors.Is(err, queue.ErrStale):
		return stStale, nil
	case errors.Is(err, queue.ErrOutcomeUnknown), strings.Contains(err.Error(), "the rest was applied"):
		return stNotApplied, err
	}
	return stNotApplied, nil
}

// linDriver is a stress run on one build: goroutine workers reclaiming,
// reading, accounting, heartbeating and settling units, every call
// recorded.
type linDriver struct {
	e       *env
	build   *queue.Build   // the transitions' client
	reads   rueidis.Client // the plain XREADGROUPs' client, never faulted
	rec     *linRecorder
	budgets linBudgets
	timeout time.Duration // reclaim timeout: a few milliseconds, so ownership moves
	faulty  bool          // failed calls are expected (connections get killed)

	notApplied atomic.Int64 // calls that failed and were not applied
	clients    atomic.Int32
	planted    bool // checking negative controls: no visualization
}

// linBuild publishes a build of n units for a stress run and returns their
// ids and the unit -> entry map the model starts from.
func linBuild(t *testing.T, e *env, n int, b linBudgets) ([]string, map[string]string) {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("unit-%02d", i)
	}
	e.publish(ids, map[string]string{
		"max_requeues": strconv.FormatInt(b.maxRequeues, 10), "requeue_tolerance": "1",
		"max_reclaims": strconv.FormatInt(b.maxReclaims, 10),
	})
	entries, err := e.do("XRANGE", e.keys.Units, "-", "+").AsXRange()
	require.NoError(t, err)
	initial := map[string]string{}
	for _, x := range entries {
		initial[x.FieldValues["id"]] = x.ID
	}
	require.Len(t, initial, n)
	return ids, initial
}

// run runs workers until the build is complete or ctx ends.
func (d *linDriver) run(ctx context.Context, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			if err := d.worker(ctx, fmt.Sprintf("w%02d", w), rand.New(rand.NewPCG(uint64(w), 11))); err != nil {
				errs <- err
				cancel()
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// done reports whether every unit is finalized.
func (d *linDriver) done(ctx context.Context) (bool, error) {
	vals, err := d.reads.Do(ctx, d.reads.B().Hmget().Key(d.e.keys.Meta).Field("finalized_count", "total_units").Build()).AsStrSlice()
	if err != nil {
		return false, err
	}
	fin, _ := strconv.Atoi(vals[0])
	total, _ := strconv.Atoi(vals[1])
	return fin >= total, nil
}

// outcome records one call's error and reports whether the worker must
// stop (a fatal error, or a failure where none is expected).
func (d *linDriver) outcome(what string, err error) (linStatus, error) {
	st, fatal := linOutcome(err)
	if fatal != nil {
		d.rec.unknown.Add(1)
		return st, fmt.Errorf("%s: %w", what, fatal)
	}
	if st == stNotApplied {
		d.notApplied.Add(1)
		if !d.faulty {
			return st, fmt.Errorf("%s: %w", what, err)
		}
	}
	return st, nil
}

func notAppliedOut(err error) linOutput {
	return linOutput{Status: stNotApplied, Err: err.Error()}
}

func (d *linDriver) worker(ctx context.Context, id string, rnd *rand.Rand) error {
	client := int(d.clients.Add(1) - 1)
	for ctx.Err() == nil {
		var r queue.Reservation
		call := d.rec.now()
		rc, err := d.build.Reclaim(ctx, id, d.timeout, int(d.budgets.maxReclaims))
		ret := d.rec.now()
		st, ferr := d.outcome(id+" reclaim", err)
		if ferr != nil {
			return ferr
		}
		switch {
		case st == stNotApplied:
			continue // no unit named: nothing for the model
		case rc.Status == queue.ReclaimFinalized:
			d.rec.add(client, linInput{Kind: opReclaim, Worker: id, Unit: rc.UnitID},
				linOutput{Status: stFinalized, Prev: rc.PreviousWorkerID}, call, ret, true)
			continue
		case rc.Status == queue.ReclaimTaken:
			r = rc.Reservation
			d.rec.add(client, linInput{Kind: opReclaim, Worker: id, Unit: r.UnitID}, linOutput{
				Status: stTaken, Stream: r.Stream, Entry: r.EntryID, DC: r.DeliveryCount,
				Retry: r.RetryIndex, Reclaim: r.ReclaimCount, Prev: rc.PreviousWorkerID,
			}, call, ret, true)
		default:
			x, ok, err := d.read(ctx, client, id)
			if err != nil {
				return err
			}
			if !ok {
				if done, err := d.done(ctx); err != nil || done {
					return err
				}
				time.Sleep(time.Millisecond)
				continue
			}
			if r, ok, err = d.account(ctx, client, id, x); err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		if err := d.hold(ctx, client, r, rnd); err != nil {
			return err
		}
	}
	return nil
}

// read delivers the next new entry to worker (priority first), as a
// recorded operation.
func (d *linDriver) read(ctx context.Context, client int, worker string) (entry, bool, error) {
	for _, s := range []queue.Stream{queue.StreamPriority, queue.StreamUnits} {
		key := d.e.keys.Units
		if s == queue.StreamPriority {
			key = d.e.keys.Priority
		}
		call := d.rec.now()
		res, err := d.reads.Do(ctx, d.reads.B().Xreadgroup().Group(queue.Group, worker).Count(1).Streams().Key(key).Id(">").Build()).AsXRead()
		ret := d.rec.now()
		if isNil(err) {
			continue
		}
		if err != nil {
			return entry{}, false, fmt.Errorf("%s XREADGROUP: %w", worker, err)
		}
		for _, xs := range res {
			if len(xs) > 0 {
				x := entry{stream: s, id: xs[0].ID, unit: xs[0].FieldValues["id"], typ: xs[0].FieldValues["type"]}
				d.rec.add(client, linInput{Kind: opRead, Worker: worker, Unit: x.unit, Stream: s, Entry: x.id},
					linOutput{Status: stOK}, call, ret, false)
				return x, true, nil
			}
		}
	}
	return entry{}, false, nil
}

// account accounts for a delivered entry, trying again while calls fail
// unapplied; ok is false when the entry was taken from the worker meanwhile.
func (d *linDriver) account(ctx context.Context, client int, worker string, x entry) (queue.Reservation, bool, error) {
	in := linInput{Kind: opAccount, Worker: worker, Unit: x.unit, Stream: x.stream, Entry: x.id}
	for ctx.Err() == nil {
		call := d.rec.now()
		dl, err := d.build.AccountDelivery(ctx, worker, x.stream, x.id, x.unit)
		ret := d.rec.now()
		st, ferr := d.outcome(worker+" accounting", err)
		if ferr != nil {
			return queue.Reservation{}, false, ferr
		}
		switch st {
		case stNotApplied:
			d.rec.add(client, in, notAppliedOut(err), call, ret, true)
			continue
		case stStale:
			d.rec.add(client, in, linOutput{Status: stStale}, call, ret, true)
			return queue.Reservation{}, false, nil
		}
		d.rec.add(client, in, linOutput{Status: stOK, DC: dl.DeliveryCount, Retry: dl.RetryIndex, Reclaim: dl.ReclaimCount}, call, ret, true)
		return queue.Reservation{WorkerID: worker, Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ,
			DeliveryCount: dl.DeliveryCount, RetryIndex: dl.RetryIndex, ReclaimCount: dl.ReclaimCount}, true, nil
	}
	return queue.Reservation{}, false, nil
}

// hold works on r for a few milliseconds with a heartbeat goroutine beside
// it, then settles it: finalize, requeue, or abandon (left for a reclaim).
func (d *linDriver) hold(ctx context.Context, client int, r queue.Reservation, rnd *rand.Rand) error {
	in := linInput{Worker: r.WorkerID, Unit: r.UnitID, Stream: r.Stream, Entry: r.EntryID, DC: r.DeliveryCount}
	beatClient := int(d.clients.Add(1) - 1)
	beat, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var beatErr error
	hb := in
	hb.Kind = opHeartbeat
	beats := rnd.IntN(6) // sometimes too few to cover the hold: ownership moves
	wg.Go(func() {
		for n := 0; beat.Err() == nil && n < beats; n++ {
			call := d.rec.now()
			err := d.build.Heartbeat(beat, r)
			ret := d.rec.now()
			if beat.Err() != nil && err != nil {
				return // stopped mid-call: the outcome is the settlement's business
			}
			st, ferr := d.outcome(r.WorkerID+" heartbeat", err)
			if ferr != nil {
				beatErr = ferr
				return
			}
			out := linOutput{Status: st}
			if st == stNotApplied {
				out = notAppliedOut(err)
			}
			d.rec.add(beatClient, hb, out, call, ret, false)
			if st == stStale {
				return
			}
			time.Sleep(time.Duration(rand.IntN(2500)) * time.Microsecond)
		}
	})
	time.Sleep(time.Duration(rnd.IntN(8000)) * time.Microsecond)

	p := rnd.IntN(10)
	for ctx.Err() == nil {
		var (
			err error
			out linOutput
		)
		call := d.rec.now()
		switch {
		case p < 2:
			in.Kind = opAbandon
			err = d.build.Abandon(ctx, r, 9)
		case p < 6:
			in.Kind = opRequeue
			var q queue.Requeued
			q, err = d.build.Requeue(ctx, r, queue.Result{DurationMS: 3, FailureSummary: "1 failure"}, queue.Budgets{})
			out = linOutput{Status: stFinalized, Retry: q.RetryIndex}
			if q.Requeued {
				out = linOutput{Status: stRequeued, Retry: q.RetryIndex, NewEntry: q.NewEntryID}
			}
		default:
			in.Kind = opFinalize
			err = d.build.Finalize(ctx, r, queue.Result{Outcome: events.OutcomePassed, DurationMS: 3})
		}
		ret := d.rec.now()
		st, ferr := d.outcome(r.WorkerID+" "+in.Kind.String(), err)
		if ferr != nil {
			stop()
			wg.Wait()
			return ferr
		}
		if st != stOK {
			out = linOutput{Status: st}
			if st == stNotApplied {
				out = notAppliedOut(err)
			}
		} else if in.Kind != opRequeue {
			out = linOutput{Status: stOK}
		}
		d.rec.add(client, in, out, call, ret, true)
		if st != stNotApplied {
			break
		}
	}
	stop()
	wg.Wait()
	return beatErr
}

// check runs porcupine on the recorded history. On failure it writes a
// visualization and names it.
func (d *linDriver) check(t *testing.T, history []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(d.budgets.model(), history, time.Minute)
	if res != porcupine.Ok && !d.planted {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("hopper-linearizability-%s-%d.html", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano()))
		if err := porcupine.VisualizePath(d.budgets.model(), info, path); err == nil {
			t.Logf("porcupine visualization: %s", path)
		}
	}
	return res
}

// requireLogMatchesCalls compares each worker's calls, as the worker was
// told their outcome, with the events the log holds from that worker, in
// order: an event for every call applied, none for a call that was not.
func (d *linDriver) requireLogMatchesCalls(t *testing.T) {
	t.Helper()
	want := map[string][]string{}
	d.rec.mu.Lock()
	calls := slices.Clone(d.rec.seq)
	d.rec.mu.Unlock()
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].call < calls[j].call })
	for _, c := range calls {
		in, out := c.in, c.out
		var ev string
		switch {
		case in.Kind == opAccount && out.Status == stOK:
			ev = "delivered " + in.Unit + " " + in.Entry
		case in.Kind == opReclaim && out.Status == stTaken:
			ev = "reclaimed " + in.Unit + " " + out.Entry
		case in.Kind == opReclaim && out.Status == stFinalized:
			ev = "finalized " + in.Unit + " *"
		case in.Kind == opFinalize && out.Status == stOK, in.Kind == opRequeue && out.Status == stFinalized:
			ev = "finalized " + in.Unit + " " + in.Entry
		case in.Kind == opRequeue && out.Status == stRequeued:
			ev = "requeued " + in.Unit + " " + in.Entry
		case in.Kind == opAbandon && out.Status == stOK:
			ev = "abandoned " + in.Unit + " " + in.Entry
		default:
			continue
		}
		want[in.Worker] = append(want[in.Worker], ev)
	}
	got := map[string][]string{}
	for _, ev := range d.e.events() {
		w, _ := ev["worker_id"].(string)
		got[w] = append(got[w], fmt.Sprint(ev["type"], " ", ev["unit_id"], " ", ev["entry_id"]))
	}
	for w, evs := range want {
		for i, ev := range evs {
			if strings.HasSuffix(ev, " *") && i < len(got[w]) && strings.HasPrefix(got[w][i], strings.TrimSuffix(ev, "*")) {
				evs[i] = got[w][i]
			}
		}
	}
	for w := range got {
		if _, ok := want[w]; !ok {
			want[w] = nil
		}
	}
	for w := range want {
		assert.Equal(t, want[w], got[w], "worker %s: the log's events against the calls it was told were applied", w)
	}
}

// linearizabilityControls checks that the model rejects histories with a
// defect planted, so that a pass means something: a finalize applied a
// second time after the run, a reclaim or an accounting replying counters
// that do not follow, a refused call after the unit was finalized reported
// applied. It returns how many controls ran.
func (d *linDriver) linearizabilityControls(t *testing.T, history []porcupine.Operation) int {
	t.Helper()
	d.planted = true
	defer func() { d.planted = false }()
	ran := 0
	var end int64
	finalizedAt := map[string]int64{} // unit -> return of the call that finalized it
	for _, op := range history {
		end = max(end, op.Return)
		in, out := op.Input.(linInput), op.Output.(linOutput)
		if out.Status == stFinalized || (in.Kind == opFinalize && out.Status == stOK) {
			finalizedAt[in.Unit] = op.Return
		}
	}
	control := func(what string, find func(in linInput, out linOutput, op porcupine.Operation) (porcupine.Operation, bool)) {
		for i, op := range history {
			planted, ok := find(op.Input.(linInput), op.Output.(linOutput), op)
			if !ok {
				continue
			}
			h := slices.Clone(history)
			if planted.Call > end {
				h = append(h, planted)
			} else {
				h[i] = planted
			}
			assert.Equal(t, porcupine.Illegal, d.check(t, h), "the model accepts %s", what)
			ran++
			return
		}
		t.Logf("no operation to plant %s on", what)
	}
	control("a finalize applied twice", func(in linInput, out linOutput, op porcupine.Operation) (porcupine.Operation, bool) {
		op.Call, op.Return = end+1, end+2
		return op, in.Kind == opFinalize && out.Status == stOK
	})
	control("a reclaim replying the wrong delivery count", func(in linInput, out linOutput, op porcupine.Operation) (porcupine.Operation, bool) {
		out.DC++
		op.Output = out
		return op, in.Kind == opReclaim && out.Status == stTaken
	})
	control("an accounting replying the wrong retry index", func(in linInput, out linOutput, op porcupine.Operation) (porcupine.Operation, bool) {
		out.Retry++
		op.Output = out
		return op, in.Kind == opAccount && out.Status == stOK
	})
	control("a refused call after finalization reported applied", func(in linInput, out linOutput, op porcupine.Operation) (porcupine.Operation, bool) {
		at, ok := finalizedAt[in.Unit]
		op.Output = linOutput{Status: stOK}
		return op, ok && op.Call > at && out.Status == stStale && (in.Kind == opHeartbeat || in.Kind == opFinalize || in.Kind == opAbandon)
	})
	return ran
}

// linStats summarizes a history for the test's log.
func linStats(history []porcupine.Operation) string {
	kinds := map[string]int{}
	units := map[string]bool{}
	for _, op := range history {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		kinds[in.Kind.String()+" "+out.Status.String()]++
		units[in.Unit] = true
	}
	keys := make([]string, 0, len(kinds))
	for k := range kinds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d operations over %d units:", len(history), len(units))
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, kinds[k])
	}
	return b.String()
}
