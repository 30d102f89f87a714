package engine

import (
	"context"

	"github.com/redis/rueidis"
)

// WorkerPlan is a transition that WATCHes only its worker's guard:
// Liveness and the prebuilt events. It says what it reads and decides on
// the replies; where they come from (a round trip of its own, or a kept
// watch, see kept_watch.go) and what time it is are the engine's.
type WorkerPlan struct {
	Mode   string
	Worker string
	// Reads are sent after the WATCH; nil: none.
	Reads func(c Conn) rueidis.Commands
	// Decide takes the replies of Reads and the server's time, and gives
	// the writes to commit (the TTL renewal left out), or a refusal.
	Decide func(c Conn, res []rueidis.RedisResult, now int64) (rueidis.Commands, error)
}

// CommitWorker runs p: on the connection kept watching for p's worker and
// mode when there is one, else on reads of its own, followed by a TIME.
func (e *Engine[S, T]) CommitWorker(ctx context.Context, p WorkerPlan) error {
	from := e.watches.take(p.Worker, p.Mode)
	return e.commitLinked(ctx, p.Mode, e.domain.WorkerGuard(p.Worker), link{From: from}, func(ctx context.Context, c Conn, t *Txn) (rueidis.Commands, error) {
		res, now, err := e.workerReads(ctx, c, t, p)
		if err != nil {
			return nil, err
		}
		writes, err := p.Decide(c, res, now)
		if writes, err = onKept[S, T](t.First != nil, nil, writes, err); err != nil {
			return nil, err
		}
		t.Now = now
		return e.domain.Renew(c, writes), nil
	})
}

// workerReads gives the replies of p's reads and the server's time: from
// t.First when a kept watch made them (the WATCH's reply first, when it
// rode with them), else from a round trip of their own that WATCHes the
// worker guard and carries a TIME.
func (e *Engine[S, T]) workerReads(ctx context.Context, c Conn, t *Txn, p WorkerPlan) ([]rueidis.RedisResult, int64, error) {
	if res := t.First; res != nil {
		if len(res) > 0 {
			if err := res[0].Error(); err != nil {
				return nil, 0, err
			}
			res = res[1:]
		}
		now, err := e.Clock.ServerNow(ctx, c)
		return res, now, err
	}
	cmds := rueidis.Commands{c.B().Watch().Key(e.domain.WorkerGuard(p.Worker)).Build()}
	if p.Reads != nil {
		cmds = append(cmds, p.Reads(c)...)
	}
	res, arrived := e.Clock.TimeTrip(ctx, c, append(cmds, c.B().Time().Build())...)
	if err := res[0].Error(); err != nil {
		return nil, 0, err
	}
	n := len(res)
	now, err := e.Clock.AnchoredNow(ctx, c, res[n-1], arrived)
	return res[1 : n-1], now, err
}
