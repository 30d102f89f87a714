package worker

import (
	"context"
	"strings"
)

// enterRound moves the worker to the build's latest round, opening a new
// one when it is a retry of a complete build that did not pass (see
// queue.Build.EnterRound): from then on every transition is the round's.
func (w *worker) enterRound(ctx context.Context) error {
	e, err := w.build.EnterRound(ctx, w.cfg.WorkerID, w.cfg.Retry)
	if err != nil {
		return err
	}
	if e.Round > 1 {
		rb, err := w.build.Round(e.Round)
		if err != nil {
			return err
		}
		w.build = rb
	}
	switch {
	case e.Opened:
		w.logf("opened round %d of build %s: %d unit(s) that did not pass in round %d run again: %s",
			e.Round, w.cfg.BuildID, len(e.Units), e.Round-1, strings.Join(e.Units, ", "))
	case e.Round > 1:
		w.logf("joined round %d of build %s", e.Round, w.cfg.BuildID)
	}
	return nil
}
