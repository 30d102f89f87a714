package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// otherModes is what the transitions outside the workload cost our side,
// in round trips: the reclaims (nothing idle; a claim of an entry the build
// saw in an earlier pending window; a claim of an entry new to it),
// liveness and a prebuilt event, each on its own and right after the
// round trip that keeps its WATCH (an empty reservation; a heartbeat
// refused STALE). The script's are one EVALSHA each.
type otherModes struct {
	reclaimNone, reclaimSeen, reclaimNew, liveness, prebuilt int64
	livenessWarm, staleWarm                                  int64
}

// measureOtherModes counts them on a small build: a worker reads two
// entries and goes quiet, and two builds opened as other processes would
// open them take the entries back. Not timed.
func measureOtherModes(ctx context.Context, e *env) (otherModes, error) {
	b, err := publish(ctx, e.admin, "bench-other-modes", 2)
	if err != nil {
		return otherModes{}, err
	}
	lost, _, _, err := e.openSide(sideOurs, b, nil, nil)
	if err != nil {
		return otherModes{}, err
	}
	for range 2 {
		x, ok, err := reserve(ctx, e.ours, b, "lost")
		if err != nil || !ok {
			return otherModes{}, fmt.Errorf("reading an entry: %v (read %v)", err, ok)
		}
		if _, err := lost.account(ctx, "lost", x); err != nil {
			return otherModes{}, err
		}
	}
	counted := func() (*queue.Build, *wireCounter, error) {
		wc := newWireCounter(&modeTracker{})
		wc.tr.set(-1)
		qb, err := queue.Open(countingClient{e.ours, wc}, b.id, queue.Options{TTL: ttl})
		return qb, wc, err
	}
	trips := func(wc *wireCounter, f func() error) (int64, error) {
		wc.mu.Lock()
		before := wc.roundTrips[nModes]
		wc.mu.Unlock()
		err := f()
		wc.mu.Lock()
		defer wc.mu.Unlock()
		return wc.roundTrips[nModes] - before, err
	}
	reclaim := func(qb *queue.Build, worker string, timeout time.Duration, want queue.ReclaimStatus) func() error {
		return func() error {
			rc, err := qb.Reclaim(ctx, worker, timeout, 3)
			if err == nil && rc.Status != want {
				err = fmt.Errorf("reclaim by %s: status %v, want %v", worker, rc.Status, want)
			}
			return err
		}
	}

	var m otherModes
	seen, wc, err := counted()
	if err != nil {
		return m, err
	}
	// The worker's first reclaim may also name it a consumer (Redis 7.2
	// and later): counted from its second.
	if err := reclaim(seen, "seer", time.Hour, queue.ReclaimNone)(); err != nil {
		return m, err
	}
	if m.reclaimNone, err = trips(wc, reclaim(seen, "seer", time.Hour, queue.ReclaimNone)); err != nil {
		return m, err
	}
	time.Sleep(30 * time.Millisecond)
	if m.reclaimSeen, err = trips(wc, reclaim(seen, "seer", 20*time.Millisecond, queue.ReclaimTaken)); err != nil {
		return m, err
	}
	if m.liveness, err = trips(wc, func() error { return seen.Liveness(ctx, "seer", "") }); err != nil {
		return m, err
	}
	ev, err := events.WorkerError{WorkerID: "seer", Phase: events.PhaseReserve, Class: "bench", Message: "measuring round trips"}.Encode()
	if err != nil {
		return m, err
	}
	if m.prebuilt, err = trips(wc, func() error { return seen.AppendPrebuilt(ctx, "seer", ev) }); err != nil {
		return m, err
	}
	fresh, wc, err := counted()
	if err != nil {
		return m, err
	}
	taken := queue.Reclaimed{}
	if m.reclaimNew, err = trips(wc, func() error {
		taken, err = fresh.Reclaim(ctx, "newcomer", 20*time.Millisecond, 3)
		if err == nil && taken.Status != queue.ReclaimTaken {
			err = fmt.Errorf("reclaim by newcomer: status %v", taken.Status)
		}
		return err
	}); err != nil {
		return m, err
	}
	if m.livenessWarm, err = warmLiveness(ctx, fresh, wc, trips); err != nil {
		return m, err
	}
	m.staleWarm, err = warmStaleRejected(ctx, seen, fresh, taken.Reservation, wc, trips)
	return m, err
}

// warmLiveness counts the round trips of an idle worker's Liveness right
// after a reservation that found nothing (its second: the first empty one
// teaches the Build that the worker is idle).
func warmLiveness(ctx context.Context, qb *queue.Build, wc *wireCounter, trips func(*wireCounter, func() error) (int64, error)) (int64, error) {
	for range 2 {
		rs, err := qb.ReserveBatch(ctx, "idler", 1, queue.ReserveOptions{Block: 10 * time.Millisecond})
		if err != nil || len(rs) > 0 {
			return 0, fmt.Errorf("an empty reservation: %v (gave %d)", err, len(rs))
		}
	}
	time.Sleep(100 * time.Millisecond) // connections the build no longer needs go back first
	return trips(wc, func() error { return qb.Liveness(ctx, "idler", "") })
}

// warmStaleRejected has thief take r (and any entry idle longer) from its
// holder, whose heartbeat through holder is refused STALE, and counts the
// round trips of the stale_rejected the holder appends next.
func warmStaleRejected(ctx context.Context, thief, holder *queue.Build, r queue.Reservation, wc *wireCounter, trips func(*wireCounter, func() error) (int64, error)) (int64, error) {
	time.Sleep(30 * time.Millisecond)
	for taken := ""; taken != r.UnitID; { // the oldest idle entry goes first
		rc, err := thief.Reclaim(ctx, "thief", 20*time.Millisecond, 3)
		if err != nil || rc.Status != queue.ReclaimTaken {
			return 0, fmt.Errorf("taking %s from %s: %v (status %v)", r.UnitID, r.WorkerID, err, rc.Status)
		}
		taken = rc.UnitID
	}
	if err := holder.Heartbeat(ctx, r); !errors.Is(err, queue.ErrStale) {
		return 0, fmt.Errorf("heartbeat after the unit was taken: %v, want ErrStale", err)
	}
	ev, err := events.StaleRejected{UnitID: r.UnitID, WorkerID: r.WorkerID, Operation: "heartbeat",
		Stream: string(r.Stream), EntryID: r.EntryID, DeliveryCount: r.DeliveryCount}.Encode()
	if err != nil {
		return 0, err
	}
	time.Sleep(100 * time.Millisecond) // the heartbeat's unused connections go back first
	return trips(wc, func() error { return holder.AppendPrebuilt(ctx, r.WorkerID, ev) })
}

func (m otherModes) print(out io.Writer) {
	fmt.Fprintf(out, "\nRound trips outside the workload, ours (counted by a client wrapper; the script's: one EVALSHA each)\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "reclaim, nothing idle\treclaim, claims an entry seen before\treclaim, claims an entry new to the build\tliveness\tprebuilt event\tliveness after an empty reservation\tstale_rejected after a refusal\t\n")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", m.reclaimNone, m.reclaimSeen, m.reclaimNew, m.liveness, m.prebuilt, m.livenessWarm, m.staleWarm)
	tw.Flush()
}
