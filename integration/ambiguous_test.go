package integration

import (
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connection that breaks while the commit is in flight leaves its outcome
// unknown to the client. The transition must find out by reading back what
// committed, and never commit twice: whichever side of EXEC the cut falls,
// the unit is finalized exactly once and the caller hears success.
func TestCommitWithLostConnection(t *testing.T) {
	for name, mode := range map[string]int32{"cut before EXEC": cutBeforeExec, "cut after EXEC": cutAfterExec} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.publish([]string{"u1", "u2"}, nil)
			r := e.reservation("w1")

			proxy := newCutProxy(t, srv.Addr())
			b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
			require.NoError(t, err)
			proxy.armed.Store(mode)
			require.NoError(t, b.Finalize(e.ctx, r, queue.Result{Outcome: "passed", DurationMS: 5}))
			require.EqualValues(t, 1, proxy.cuts.Load(), "the proxy cut one commit")

			assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"])
			finalized := 0
			for _, ev := range e.events() {
				if ev["type"] == "finalized" {
					finalized++
				}
			}
			assert.Equal(t, 1, finalized, "finalized events")
			assert.EqualValues(t, 1, e.worker("w1")["processed"])
			assert.Empty(t, e.pending(e.keys.Units))

			// A transition that is not fenced by the entry (accounting, then
			// liveness) is not repeated either: one delivered event.
			x, _ := e.reserve("w1")
			proxy.armed.Store(mode)
			_, err = b.AccountDelivery(e.ctx, "w1", x.stream, x.id, x.unit)
			require.NoError(t, err)
			delivered := 0
			for _, ev := range e.events() {
				if ev["type"] == "delivered" && ev["unit_id"] == x.unit {
					delivered++
				}
			}
			assert.Equal(t, 1, delivered, "delivered events of %s", x.unit)
		})
	}
}
