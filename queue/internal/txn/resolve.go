package txn

import (
	"context"
	"time"
)

// resolve finds out whether the commit that wrote token to guard was
// applied, after its reply was lost. Env.ResolveOnce also makes sure a
// commit still in flight can never apply later: when the token is not
// there it writes the guard in a transaction of its own, and a late EXEC of
// the lost commit, which watched that guard, then aborts. It keeps trying
// for ResolveWait, even after ctx ends, since the caller cannot act without
// the answer (docs/design.md#lost-replies).
func (r *Runner[C, R]) resolve(ctx context.Context, guard, token string) (applied bool, err error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.Policy.ResolveWait)
	defer cancel()
	wait := 10 * time.Millisecond
	for {
		applied, done, err := r.Env.ResolveOnce(rctx, guard, token)
		if done {
			return applied, nil
		}
		if serr := Sleep(rctx, Jitter(wait)); serr != nil {
			if err == nil {
				err = serr
			}
			return false, err
		}
		wait = min(wait*2, time.Second)
	}
}
