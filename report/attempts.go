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
	var out []*Attempt
	open := map[string]*Attempt{} // unit -> its attempt in progress
	var lastMS int64
	closeAs := func(a *Attempt, end string, at int64) {
		a.End, a.EndMS = end, max(at, a.StartMS)
	}
	for _, ev := range log {
		lastMS = max(lastMS, ev.AtMS)
		if !ev.UnitScoped() {
			continue
		}
		unit := *ev.UnitID
		cur := open[unit]
		switch ev.Type {
		case events.TypeDelivered, events.TypeReclaimed:
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
			out = append(out, a)
			open[unit] = a
		case events.TypeAbandoned:
			if cur != nil && cur.Worker == ev.WorkerID {
				cur.AbandonedAtMS = ev.AtMS
			}
		case events.TypeRequeued:
			if cur != nil && cur.Worker == ev.WorkerID {
				closeAs(cur, EndRequeued, ev.AtMS)
				cur.DurationMS = ev.DurationMS
				delete(open, unit)
			}
		case events.TypeFinalized:
			reason := ""
			if ev.Reason != nil {
				reason = *ev.Reason
			}
			if cur != nil && cur.Worker == ev.WorkerID && reason != events.ReasonReclaimBudgetExhausted {
				closeAs(cur, ev.Outcome, ev.AtMS)
				cur.Reason, cur.DurationMS = reason, ev.DurationMS
				delete(open, unit)
				continue
			}
			// Finalized by a worker that did not run it: a reclaim past the
			// budget. The silent owner's attempt was lost.
			if cur != nil {
				closeAs(cur, EndLost, ev.AtMS)
				delete(open, unit)
			}
			end := ev.Outcome
			if end != EndPassed {
				end = EndFailed
			}
			out = append(out, &Attempt{
				Unit: unit, Worker: ev.WorkerID, StartMS: ev.AtMS, EndMS: ev.AtMS, End: end, Reason: reason,
				RetryIndex: ev.RetryIndex, ReclaimCount: ev.ReclaimCount, NoRun: true,
			})
		case events.TypeStaleRejected:
			// The lost attempt of this worker ended now, its result refused.
			for i := len(out) - 1; i >= 0; i-- {
				a := out[i]
				if a.Unit == unit && a.Worker == ev.WorkerID && a.End == EndLost {
					a.End, a.EndMS = EndStale, max(ev.AtMS, a.StartMS)
					break
				}
			}
		}
	}
	for _, a := range open {
		closeAs(a, EndRunning, lastMS)
	}
	res := make([]Attempt, len(out))
	for i, a := range out {
		res[i] = *a
	}
	sort.SliceStable(res, func(i, j int) bool { return res[i].StartMS < res[j].StartMS })
	return res
}
