package worker

import "github.com/hopper-queue/hopper/queue"

// measure hands the duration of a unit's first attempt, settled, to
// Config.Measured. The first attempt is the one every unit has, so it is
// what the next build's order is about; a retry runs a unit already known
// to be failing, often cut short by that. A result that says nothing about
// the unit (interrupted, killed by a signal) is not a duration of it.
func (w *worker) measure(r queue.Reservation, res Result) {
	if w.cfg.Measured == nil || r.RetryIndex != 0 || res.NoRequeue || res.Duration <= 0 {
		return
	}
	w.cfg.Measured(r.UnitID, res.Duration)
}
