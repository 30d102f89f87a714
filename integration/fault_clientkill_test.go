package integration

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFaultClientKillDuringTransitions runs the linearizability stress run
// (linearizability_model_test.go) while an admin connection keeps killing
// the transitions' connections with CLIENT KILL, every millisecond or two,
// whatever they are doing: between WATCH and EXEC, inside MULTI, right
// after EXEC, or idle in the pool. Each transition must be applied once or
// not at all, and its caller must learn which:
//   - nil: applied once; ErrStale: refused, nothing written; any other
//     error: nothing applied (the driver then tries again). The queue itself
//     starts a transaction over when its read phase loses the connection,
//     so such errors are rare;
//   - queue.ErrOutcomeUnknown must never come back, since Redis stays
//     reachable: a commit whose reply was lost is resolved by reading.
//
// Three checks hold the outcomes the callers were told against what
// happened: porcupine (a failed call is a step that changes nothing, so a
// history where it was applied after all does not linearize), the log (for
// each worker, exactly the events of the calls it was told were applied,
// in order) and the build's final state (checkSettledOnce). The plain
// XREADGROUPs go through a client the killer leaves alone: a read whose
// reply is lost hands out an entry nobody knows about, which is the
// reclaim's business, not the transitions'.
func TestFaultClientKillDuringTransitions(t *testing.T) {
	const (
		units   = 32
		workers = 6
	)
	e := newEnv(t)
	budgets := linBudgets{maxRequeues: 3, maxReclaims: 3}
	ids, initial := linBuild(t, e, units, budgets)
	name := "hopper-killed-" + randomHex(6)
	tx := namedClient(t, name)
	b, err := queue.OpenKeys(tx, e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	d := &linDriver{e: e, build: b, reads: e.client, rec: newLinRecorder(initial), budgets: budgets, timeout: 3 * time.Millisecond, faulty: true}

	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	killing, stopKilling := context.WithCancel(ctx)
	var k killer
	var wg sync.WaitGroup
	wg.Go(func() { k.run(killing, t, e.admin, name) })
	start := time.Now()
	runErr := d.run(ctx, workers)
	stopKilling()
	wg.Wait()
	require.NoError(t, runErr)

	history := d.rec.history()
	t.Logf("history: %s (run %v)", linStats(history), time.Since(start).Round(time.Millisecond))
	t.Logf("kills: %d (inside MULTI %d, right after EXEC %d, between WATCH and EXEC %d, idle %d); calls that failed unapplied: %d",
		k.total, k.inMulti, k.afterExec, k.watched, k.idle, d.notApplied.Load())
	assert.Positive(t, k.total, "connections killed")
	assert.Positive(t, k.afterExec+k.watched+k.inMulti, "connections killed in the middle of a transition")
	assert.Zero(t, d.rec.unknown.Load(), "calls whose outcome stayed unknown")

	res := d.check(t, history)
	require.Equal(t, porcupine.Ok, res, "the history with connections killed is not linearizable")
	d.requireLogMatchesCalls(t)
	checkSettledOnce(t, e, ids)
	t.Logf("figures: faults=%d builds_completed=1 units_lost=0 units_finalized_twice=0 histories_checked=1 operations=%d", k.total, len(history))
}

// killer kills the connections of one client name, at random, with CLIENT
// KILL ID, and counts what the victims were doing (CLIENT LIST's multi and
// cmd fields).
type killer struct {
	total, inMulti, afterExec, watched, idle int
}

func (k *killer) run(ctx context.Context, t *testing.T, admin rueidis.Client, name string) {
	rnd := rand.New(rand.NewPCG(7, 7))
	for ctx.Err() == nil {
		list, err := admin.Do(ctx, admin.B().ClientList().TypeNormal().Build()).ToString()
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("CLIENT LIST: %v", err)
			}
			return
		}
		var victims []map[string]string
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			f := map[string]string{}
			for _, kv := range strings.Fields(line) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					f[k] = v
				}
			}
			if f["name"] == name {
				victims = append(victims, f)
			}
		}
		if len(victims) > 0 {
			v := victims[rnd.IntN(len(victims))]
			if err := admin.Do(ctx, admin.B().Arbitrary("CLIENT", "KILL", "ID", v["id"]).Build()).Error(); err == nil {
				k.total++
				switch cmd := v["cmd"]; {
				case v["multi"] != "-1":
					k.inMulti++
				case cmd == "exec":
					k.afterExec++
				case cmd == "watch" || cmd == "xpending" || cmd == "hget" || cmd == "hmget" || cmd == "time" || cmd == "exists" || cmd == "xrange" || cmd == "xinfo|stream":
					k.watched++
				default:
					k.idle++
				}
			}
		}
		time.Sleep(time.Duration(500+rnd.IntN(2000)) * time.Microsecond)
	}
}

// namedClient connects to the package's server as the code under test does
// (the scripting-denied user under HOPPER_TEST_ACL), with every connection
// named, so that a killer can find them; closed by t.Cleanup.
func namedClient(t *testing.T, name string) rueidis.Client {
	t.Helper()
	opt := rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, ClientName: name}
	if os.Getenv("HOPPER_TEST_ACL") != "" {
		srv.Client(t) // creates the user
		opt.Username, opt.Password = redistest.NoScriptUser, redistest.NoScriptUser
	}
	c, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}
