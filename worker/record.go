package worker

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// recordTimeout bounds how long recording a worker_error or stale_rejected
// event may take, even after the worker's context ended.
const recordTimeout = 5 * time.Second

// logf writes one of the worker's own lines to Config.Log.
func (w *worker) logf(format string, args ...any) {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	fmt.Fprintf(w.cfg.Log, format+"\n", args...)
}

// recordError appends a worker_error event, best effort: the worker is
// already failing, and the error it returns says more than a failure to
// record it.
func (w *worker) recordError(ctx context.Context, phase, unit string, err error, backtrace []string) {
	ev, eerr := events.WorkerError{
		WorkerID: w.cfg.WorkerID, Phase: phase, UnitID: unit,
		Class: errorClass(err), Message: err.Error(), Backtrace: backtrace,
	}.Encode()
	if eerr == nil {
		eerr = w.appendPrebuilt(ctx, ev)
	}
	if eerr != nil {
		w.logf("could not record worker_error (%s): %v", phase, eerr)
	}
}

// recordStale appends a stale_rejected event for r's refused operation.
func (w *worker) recordStale(ctx context.Context, r queue.Reservation, op string) {
	ev, err := events.StaleRejected{
		UnitID: r.UnitID, WorkerID: r.WorkerID, RetryIndex: r.RetryIndex, ReclaimCount: r.ReclaimCount,
		Operation: op, Stream: string(r.Stream), EntryID: r.EntryID, DeliveryCount: r.DeliveryCount,
	}.Encode()
	if err == nil {
		err = w.appendPrebuilt(ctx, ev)
	}
	if err != nil {
		w.logf("could not record stale_rejected for %s: %v", r.UnitID, err)
	}
}

func (w *worker) appendPrebuilt(ctx context.Context, ev []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return w.build.AppendPrebuilt(ctx, w.cfg.WorkerID, ev)
}

func typeName(err error) string {
	t := reflect.TypeOf(err)
	if t == nil {
		return "error"
	}
	return strings.TrimPrefix(t.String(), "*")
}
