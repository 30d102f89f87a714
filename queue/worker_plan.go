package queue

import (
	"context"

	"github.com/redis/rueidis"
)

// workerPlan is a transition that WATCHes only its worker's guard:
// Liveness and the prebuilt events. It says what it reads and decides on
// the replies; where they come from (a round trip of its own, or a kept
// watch, see kept_watch.go) and what time it is are the engine's, in
// commitWorker.
type workerPlan struct {
	mode   string
	worker string
	// reads are sent after the WATCH; nil: none.
	reads func(c rueidis.DedicatedClient) rueidis.Commands
	// decide takes the replies of reads and the server's time, and gives
	// the writes to commit (the TTL renewal left out), or a refusal.
	decide func(c rueidis.DedicatedClient, res []rueidis.RedisResult, now int64) (rueidis.Commands, error)
}

// commitWorker runs p: on the connection kept watching for p's worker and
// mode when there is one, else on reads of its own, followed by a TIME.
func (e *engine) commitWorker(ctx context.Context, p workerPlan) error {
	from := e.watches.take(p.worker, p.mode)
	return e.commitLinked(ctx, p.mode, e.schema.workerGuard(p.worker), link{From: from}, func(ctx context.Context, c rueidis.DedicatedClient, t *tx) (rueidis.Commands, error) {
		kept := t.First != nil
		res, now, err := e.workerReads(ctx, c, t, p)
		if err != nil {
			return nil, err
		}
		writes, err := p.decide(c, res, now)
		if err != nil {
			return nil, refusalOnKept(kept, err)
		}
		t.Now = now
		return e.schema.renew(c, writes), nil
	})
}

// workerReads gives the replies of p's reads and the server's time: from
// t.First when a kept watch made them (the WATCH's reply first, when it
// rode with them), else from a round trip of their own that WATCHes the
// worker guard and carries a TIME.
func (e *engine) workerReads(ctx context.Context, c rueidis.DedicatedClient, t *tx, p workerPlan) ([]rueidis.RedisResult, int64, error) {
	if res := t.First; res != nil {
		if len(res) > 0 {
			if err := res[0].Error(); err != nil {
				return nil, 0, err
			}
			res = res[1:]
		}
		now, err := e.clock.ServerNow(ctx, c)
		return res, now, err
	}
	cmds := rueidis.Commands{c.B().Watch().Key(e.schema.workerGuard(p.worker)).Build()}
	if p.reads != nil {
		cmds = append(cmds, p.reads(c)...)
	}
	res, arrived := e.clock.TimeTrip(ctx, c, append(cmds, c.B().Time().Build())...)
	if err := res[0].Error(); err != nil {
		return nil, 0, err
	}
	n := len(res)
	now, err := e.clock.AnchoredNow(ctx, c, res[n-1], arrived)
	return res[1 : n-1], now, err
}

// refusalOnKept is the rule every engine path keeps: reads made before the
// call (kept reads, a kept watch) may back a commit, whose EXEC checks
// them, never a refusal, which nothing checks. A refusal decided on them
// (err non-nil, kept) starts the transition over on fresh reads
// (docs/design.md#reads-from-before-the-call).
func refusalOnKept(kept bool, err error) error {
	if kept && err != nil {
		return errRetry
	}
	return err
}
