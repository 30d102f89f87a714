package report

import (
	"sort"

	"github.com/hopper-queue/hopper/events"
)

// How an attempt ended: the summary's per-unit figures and the HTML
// report's timeline say it in these words.
const (
	EndPassed   = "passed"   // finalized passed
	EndFailed   = "failed"   // finalized failed
	EndRequeued = "requeued" // failed, and went back to the queue for a retry
	EndLost     = "lost"     // its worker went silent; another reclaimed the unit
	EndStale    = "stale"    // it finished after the unit was reclaimed: result refused
	EndRunning  = "running"  // the log says nothing of its end
)

// Attempt is one worker's hold on one unit, from the delivery (or reclaim)
// to the event that ended it.
type Attempt struct {
	Unit, Worker     string
	StartMS, EndMS   int64
	End              string
	Reason           string // of a failed end
	RetryIndex       int64
	ReclaimCount     int64
	Reclaimed        bool  // started by taking the unit from a silent worker
	AbandonedAtMS    int64 // when it ran past --max-unit-duration; 0 if it did not
	DurationMS       float64
	NoRun            bool // finalized without running (reclaim budget spent)
	PreviousWorkerID string
}

// Attempts rebuilds the attempts from the attempt log, in the order they
// started. Events not about a unit are skipped.
func Attempts(log []events.Event) []Attempt {
	r := attemptLog{open: map[string]*Attempt{}}
	for _, ev := range log {
		r.lastMS = max(r.lastMS, ev.AtMS)
		if !ev.UnitScoped() {
			continue
		}
		unit := *ev.UnitID
		cur := r.open[unit]
		switch ev.Type {
		case events.TypeDelivered, events.TypeReclaimed:
			r.started(ev, unit, cur)
		case events.TypeAbandoned:
			if cur != nil && cur.Worker == ev.WorkerID {
				cur.AbandonedAtMS = ev.AtMS
			}
		case events.TypeRequeued:
			if cur != nil && cur.Worker == ev.WorkerID {
				closeAs(cur, EndRequeued, ev.AtMS)
				cur.DurationMS = ev.DurationMS
				delete(r.open, unit)
			}
		case events.TypeFinalized:
			r.finalized(ev, unit, cur)
		case events.TypeStaleRejected:
			r.staleRejected(ev, unit)
		}
	}
	for _, a := range r.open {
		closeAs(a, EndRunning, r.lastMS)
	}
	res := make([]Attempt, len(r.out))
	for i, a := range r.out {
		res[i] = *a
	}
	sort.SliceStable(res, func(i, j int) bool { return res[i].StartMS < res[j].StartMS })
	return res
}

// attemptLog is the attempts rebuilt so far, for Attempts.
type attemptLog struct {
	out    []*Attempt
	open   map[string]*Attempt // unit -> its attempt in progress
	lastMS int64
}

func closeAs(a *Attempt, end string, at int64) {
	a.End, a.EndMS = end, max(at, a.StartMS)
}

// started opens the attempt a delivery or reclaim starts; cur, the unit's
// attempt in progress, was lost.
func (r *attemptLog) started(ev events.Event, unit string, cur *Attempt) {
	if cur != nil {
		closeAs(cur, EndLost, ev.AtMS)
	}
	a := &Attempt{
		Unit: unit, Worker: ev.WorkerID, StartMS: ev.AtMS,
		RetryIndex: ev.RetryIndex, ReclaimCount: ev.ReclaimCount,
		Reclaimed: ev.Type == events.TypeReclaimed,
	}
	if ev.PreviousWorkerID != nil {
		a.PreviousWorkerID = *ev.PreviousWorkerID
	}
	r.out = append(r.out, a)
	r.open[unit] = a
}

// finalized ends cur, the unit's attempt in progress, when its worker
// finalized it; otherwise the unit was finalized by a reclaim past its
// budget, an attempt that did not run.
func (r *attemptLog) finalized(ev events.Event, unit string, cur *Attempt) {
	reason := ""
	if ev.Reason != nil {
		reason = *ev.Reason
	}
	if cur != nil && cur.Worker == ev.WorkerID && reason != events.ReasonReclaimBudgetExhausted {
		closeAs(cur, ev.Outcome, ev.AtMS)
		cur.Reason, cur.DurationMS = reason, ev.DurationMS
		delete(r.open, unit)
		return
	}
	// Finalized by a worker that did not run it: a reclaim past the
	// budget. The silent owner's attempt was lost.
	if cur != nil {
		closeAs(cur, EndLost, ev.AtMS)
		delete(r.open, unit)
	}
	end := ev.Outcome
	if end != EndPassed {
		end = EndFailed
	}
	r.out = append(r.out, &Attempt{
		Unit: unit, Worker: ev.WorkerID, StartMS: ev.AtMS, EndMS: ev.AtMS, End: end, Reason: reason,
		RetryIndex: ev.RetryIndex, ReclaimCount: ev.ReclaimCount, NoRun: true,
	})
}

// staleRejected ends the lost attempt of the event's worker: its result
// was refused.
func (r *attemptLog) staleRejected(ev events.Event, unit string) {
	for i := len(r.out) - 1; i >= 0; i-- {
		a := r.out[i]
		if a.Unit == unit && a.Worker == ev.WorkerID && a.End == EndLost {
			a.End, a.EndMS = EndStale, max(ev.AtMS, a.StartMS)
			break
		}
	}
}
