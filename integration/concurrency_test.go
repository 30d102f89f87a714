package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentOwnership moves ownership while owners work: a reclaim
// timeout of a few milliseconds, many workers, and a heartbeat goroutine
// beside each unit's work racing the settlement of the same worker. Whatever
// the interleaving, the log and the state must agree that every unit was
// settled exactly once, by a worker that held it.
//
// Built with -tags hopper_unfenced (no entry guards: what watching the stream
// key amounts to, since WATCH does not see XACK or XCLAIM) this test fails,
// and make test-unfenced (part of make test) holds it to that. Heartbeats
// come at random gaps up to 5 ms against the 3 ms reclaim timeout, so that
// ownership moves under owners that are still working, dozens of times a run.
func TestConcurrentOwnership(t *testing.T) {
	const (
		units   = 120
		workers = 16
	)
	e := newEnv(t)
	ids := make([]string, units)
	for i := range ids {
		ids[i] = fmt.Sprintf("spec/unit_%03d_spec.rb", i)
	}
	e.publish(ids, map[string]string{"max_requeues": "2", "requeue_tolerance": "0.5", "max_reclaims": "2"})

	ctx, cancel := context.WithTimeout(e.ctx, 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := churn(ctx, e, fmt.Sprintf("w%02d", w), rand.New(rand.NewPCG(uint64(w), 7))); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	checkSettledOnce(t, e, ids)
}

// churn is one worker: reclaim first, else reserve; hold the unit a few
// milliseconds with a heartbeat beside it; settle it (pass, fail and requeue,
// or abandon and let it be reclaimed) until the build is complete.
func churn(ctx context.Context, e *env, worker string, rnd *rand.Rand) error {
	b := e.build
	for ctx.Err() == nil {
		var r queue.Reservation
		rc, err := b.Reclaim(ctx, worker, 3*time.Millisecond, 2)
		switch {
		case err != nil:
			return fmt.Errorf("%s reclaim: %w", worker, err)
		case rc.Status == queue.ReclaimTaken:
			r = rc.Reservation
		default:
			x, ok, err := reserveOnce(ctx, e, worker)
			if err != nil {
				return err
			}
			if !ok {
				done, err := complete(ctx, e)
				if err != nil || done {
					return err
				}
				if err := b.Liveness(ctx, worker, ""); err != nil {
					return fmt.Errorf("%s liveness: %w", worker, err)
				}
				continue
			}
			d, err := b.AccountDelivery(ctx, worker, x.stream, x.id, x.unit)
			if errors.Is(err, queue.ErrStale) {
				continue // reclaimed between the read and the accounting: nothing taken
			}
			if err != nil {
				return fmt.Errorf("%s accounting: %w", worker, err)
			}
			r = queue.Reservation{WorkerID: worker, Stream: x.stream, EntryID: x.id, UnitID: x.unit, UnitType: x.typ,
				DeliveryCount: d.DeliveryCount, RetryIndex: d.RetryIndex, ReclaimCount: d.ReclaimCount}
		}
		if err := hold(ctx, b, r, rnd); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func hold(ctx context.Context, b *queue.Build, r queue.Reservation, rnd *rand.Rand) error {
	beat, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	var beatErr error
	go func() {
		defer wg.Done()
		for beat.Err() == nil {
			err := b.Heartbeat(beat, r)
			if errors.Is(err, queue.ErrStale) || beat.Err() != nil {
				return
			}
			if err != nil {
				beatErr = fmt.Errorf("%s heartbeat: %w", r.WorkerID, err)
				return
			}
			time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond) // rnd is not for this goroutine
		}
	}()
	time.Sleep(time.Duration(rnd.IntN(6000)) * time.Microsecond)
	var err error
	switch p := rnd.IntN(10); {
	case p < 1:
		err = b.Abandon(ctx, r, 9)
		stop() // an abandoned unit stops renewing and waits to be reclaimed
		wg.Wait()
		if errors.Is(err, queue.ErrStale) {
			err = nil
		}
		return errors.Join(err, beatErr)
	case p < 4:
		_, err = b.Requeue(ctx, r, queue.Result{DurationMS: 3, FailureSummary: "1 failure"}, queue.Budgets{})
	default:
		err = b.Finalize(ctx, r, queue.Result{Outcome: "passed", DurationMS: 3})
	}
	// The heartbeat keeps racing the settlement on purpose; stop it after.
	stop()
	wg.Wait()
	if errors.Is(err, queue.ErrStale) {
		return beatErr // lost to a reclaim: the result is discarded
	}
	if err != nil {
		return fmt.Errorf("%s settle %s: %w", r.WorkerID, r.UnitID, err)
	}
	return beatErr
}

func reserveOnce(ctx context.Context, e *env, worker string) (entry, bool, error) {
	for _, key := range []string{e.keys.Priority, e.keys.Units} {
		s := queue.StreamUnits
		if key == e.keys.Priority {
			s = queue.StreamPriority
		}
		res, err := e.client.Do(ctx, e.client.B().Xreadgroup().Group(queue.Group, worker).Count(1).Streams().Key(key).Id(">").Build()).AsXRead()
		if err != nil {
			if isNil(err) {
				continue
			}
			return entry{}, false, err
		}
		for _, xs := range res {
			if len(xs) > 0 {
				return entry{stream: s, id: xs[0].ID, unit: xs[0].FieldValues["id"], typ: xs[0].FieldValues["type"]}, true, nil
			}
		}
	}
	return entry{}, false, nil
}

func complete(ctx context.Context, e *env) (bool, error) {
	vals, err := e.client.Do(ctx, e.client.B().Hmget().Key(e.keys.Meta).Field("finalized_count", "total_units").Build()).AsStrSlice()
	if err != nil {
		return false, err
	}
	done, _ := strconv.Atoi(vals[0])
	total, _ := strconv.Atoi(vals[1])
	// Past the total means units were settled twice: stop, and let the
	// checks say which.
	return done >= total, nil
}

// checkSettledOnce checks a finished build's log and state against each
// other: one finalized event per unit, no event from a worker that no longer
// held the entry, counters that match the log, nothing left pending.
func checkSettledOnce(t *testing.T, e *env, ids []string) {
	t.Helper()
	meta := e.hash(e.keys.Meta)
	assert.Equal(t, strconv.Itoa(len(ids)), meta["finalized_count"], "finalized_count")

	type holder struct {
		worker string
		open   bool
	}
	owner := map[string]*holder{} // stream/entry -> its holder, from the log
	finalized := map[string]int{}
	reclaims := map[string]int{}
	requeues := map[string]int{}
	settlements := map[string]int{}
	requeuedUnits := map[string]bool{}
	moved := 0 // entries taken from a holder that had not settled them
	for i, ev := range e.events() {
		typ, _ := ev["type"].(string)
		unit, _ := ev["unit_id"].(string)
		worker, _ := ev["worker_id"].(string)
		key := fmt.Sprint(ev["stream"], "/", ev["entry_id"])
		h := owner[key]
		switch typ {
		case "delivered":
			if h != nil && (h.worker != worker || !h.open) {
				t.Errorf("event %d: %s accounted %s, held by %s (open %v)", i, worker, key, h.worker, h.open)
			}
			owner[key] = &holder{worker: worker, open: true}
		case "reclaimed":
			if h != nil && !h.open {
				t.Errorf("event %d: %s reclaimed %s after it was settled", i, worker, key)
			}
			if h != nil && h.open {
				moved++
			}
			owner[key] = &holder{worker: worker, open: true}
			reclaims[unit]++
		case "finalized", "requeued", "abandoned":
			byReclaim := ev["reason"] == "reclaim_budget_exhausted"
			if !byReclaim && (h == nil || h.worker != worker || !h.open) {
				t.Errorf("event %d: %s %s on %s it did not hold (holder %+v)", i, worker, typ, key, h)
			}
			if typ == "abandoned" {
				continue
			}
			if h == nil {
				h = &holder{}
				owner[key] = h
			}
			h.open = false
			if typ == "finalized" {
				finalized[unit]++
			} else {
				requeues[unit]++
				requeuedUnits[unit] = true
			}
			if !byReclaim {
				settlements[worker]++
			}
		default:
			t.Errorf("event %d: unexpected type %q", i, typ)
		}
	}
	t.Logf("ownership moved %d times from a holder that had not settled", moved)
	for _, id := range ids {
		assert.Equal(t, 1, finalized[id], "finalized events of %s", id)
		want := fmt.Sprintf(`{"retry_index":%d,"reclaim_count":%d,"entered_retry":%v}`, requeues[id], reclaims[id], requeuedUnits[id])
		assert.Equal(t, want, e.unitState(id), "unit_state of %s against the log", id)
	}
	assert.Equal(t, strconv.Itoa(len(requeuedUnits)), meta["requeued_units_count"], "requeued_units_count")
	for worker, raw := range e.hash(e.keys.Workers) {
		assert.Contains(t, raw, fmt.Sprintf(`"processed":%d}`, settlements[worker]), "worker %s processed against its settlements in the log", worker)
	}
	assert.Empty(t, e.pending(e.keys.Units), "pending in units")
	assert.Empty(t, e.pending(e.keys.Priority), "pending in units:priority")
	e.requireTTLs()
}
