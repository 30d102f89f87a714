package report

// UnitFigures is one unit in the JSON summary's "units": its final outcome
// and every attempt at it, so that a build's time can be read per unit
// (which ran long, where, and how long the slots waited for the last).
type UnitFigures struct {
	UnitID string `json:"unit_id"`
	// Outcome is the last finalized event's: passed or failed; null when
	// the unit was never finalized.
	Outcome  *string          `json:"outcome"`
	Attempts []AttemptFigures `json:"attempts"`
}

// AttemptFigures is one attempt at a unit, by the server's clock.
type AttemptFigures struct {
	WorkerID string `json:"worker_id"`
	// End is how the attempt ended: EndPassed, EndFailed, EndRequeued,
	// EndLost, EndStale or EndRunning.
	End     string `json:"end"`
	StartMS int64  `json:"start_ms"`
	EndMS   int64  `json:"end_ms"`
	// DurationMS is the worker's own measure of the attempt, when it
	// settled one; else the time between its events.
	DurationMS float64 `json:"duration_ms"`
	// Ran is false for a unit finalized without running (its reclaim
	// budget spent).
	Ran bool `json:"ran"`
}

// Units returns the figures of every unit: the manifest's in order, then
// any other unit the log names.
func (r *Report) Units() []UnitFigures {
	byUnit := map[string][]AttemptFigures{}
	for _, a := range Attempts(r.log().Events()) {
		d := a.DurationMS
		if d <= 0 {
			d = float64(a.EndMS - a.StartMS)
		}
		byUnit[a.Unit] = append(byUnit[a.Unit], AttemptFigures{
			WorkerID: a.Worker, End: a.End, StartMS: a.StartMS, EndMS: a.EndMS, DurationMS: d, Ran: !a.NoRun,
		})
	}
	final := map[string]string{}
	for _, u := range r.log().Units() {
		if f, ok := r.log().lastFinalized(u); ok {
			final[u] = f.Outcome
		}
	}
	var ids []string
	seen := map[string]bool{}
	if r.Meta != nil {
		for _, u := range r.Meta.UnitIDs {
			ids, seen[u] = append(ids, u), true
		}
	}
	for _, u := range r.log().Units() {
		if !seen[u] {
			ids, seen[u] = append(ids, u), true
		}
	}
	out := make([]UnitFigures, 0, len(ids))
	for _, u := range ids {
		f := UnitFigures{UnitID: u, Attempts: byUnit[u]}
		if f.Attempts == nil {
			f.Attempts = []AttemptFigures{}
		}
		if o, ok := final[u]; ok {
			f.Outcome = &o
		}
		out = append(out, f)
	}
	return out
}
