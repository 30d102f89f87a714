package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
)

// workerCounters is what the workers' queues counted (the package's global
// meter), by mode: retries and aborts.
type workerCounters struct{ retries, aborts map[string]int64 }

func readWorkerCounters(t testing.TB) workerCounters {
	r, a := countersOf(t, meter)
	return workerCounters{r, a}
}

// since logs the retries and aborts counted since w.
func (w workerCounters) logSince(t testing.TB, what string) {
	t.Helper()
	now := readWorkerCounters(t)
	var parts []string
	for mode, n := range now.retries {
		if d := n - w.retries[mode]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", mode, d, now.aborts[mode]-w.aborts[mode]))
		}
	}
	sort.Strings(parts)
	t.Logf("%s: transaction retries/aborts by mode: %s", what, strings.Join(parts, ", "))
}

// finishOnFailure ends m when the test fails before it does: the next
// tests need a cluster with no slot half migrated.
func finishOnFailure(t *testing.T, m *redistest.Migration) {
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := m.Finish(ctx); err != nil {
				t.Logf("finishing the migration of slot %d: %v", m.Slot, err)
			}
		}
	})
}

// A build's slot moves twice while its workers run it: once slowly, key by
// key, so that the workers' transactions meet ASK and TRYAGAIN while the
// slot is half on each node, then at once to the third primary, so that
// they meet MOVED. Nothing is lost, nothing doubled.
func TestClusterSlotMigrationMidBuild(t *testing.T) {
	const units, workers = 60, 4
	f := newFleet(t, "", unitNames(units))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	before := readWorkerCounters(t)
	run := f.start(ctx, workers, flakyFunc(40*time.Millisecond, everyNth(7)))

	f.waitFinalized(ctx, run, 10)
	first, second := f.primary(), otherPrimary(t, f.slot())
	m, err := cl.BeginMigration(ctx, f.slot(), second)
	require.NoError(t, err)
	finishOnFailure(t, m)
	start, moved := time.Now(), 0
	for {
		n, err := m.MoveKeys(ctx, 1)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		moved += n
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, m.Finish(ctx))
	p, err := f.q.Progress(ctx)
	require.NoError(t, err)
	t.Logf("slot %d moved key by key from %s to %s: %d keys in %v, at %d/%d units finalized",
		f.slot(), first, second, moved, time.Since(start), p.Finalized, p.Total)

	f.waitFinalized(ctx, run, 35)
	var third string
	primaries, err := cl.Primaries(ctx)
	require.NoError(t, err)
	for _, p := range primaries {
		if p != first && p != second {
			third = p
		}
	}
	require.NoError(t, cl.MigrateSlot(ctx, f.slot(), third))
	p, err = f.q.Progress(ctx)
	require.NoError(t, err)
	t.Logf("slot %d moved at once to %s at %d/%d units finalized", f.slot(), third, p.Finalized, p.Total)

	requireWorkersOK(t, run)
	before.logSince(t, "workers")
	types := f.requireFinalizedOnce(f.suite.Units)
	t.Logf("events: %v", types)
	assert.Equal(t, third, f.primary())
	f.requireOnOneNode()
	f.report(report.VerdictPassed)
}

// A transition started while the build's slot is half migrated (some keys
// on each node) keeps starting over on ASK and TRYAGAIN, commits nothing
// meanwhile, and commits once the migration ends.
func TestClusterTransactionDuringMigration(t *testing.T) {
	b := newBuild(t, "")
	units := []string{"u1", "u2"}
	b.publish(manifestOf(units))
	r, ok, err := b.q.Reserve(b.ctx, "w1", queue.ReserveOptions{Timeout: time.Minute, Block: 10 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)

	m, err := cl.BeginMigration(b.ctx, b.slot(), otherPrimary(t, b.slot()))
	require.NoError(t, err)
	finishOnFailure(t, m)
	n, err := m.MoveKeys(b.ctx, 3) // of about ten
	require.NoError(t, err)
	require.Equal(t, 3, n)

	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- b.q.Finalize(b.ctx, r, queue.Result{Outcome: "passed", DurationMS: 1}) }()
	select {
	case err := <-done:
		t.Fatalf("finalize returned %v while the slot was half migrated", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, m.Finish(b.ctx))
	require.NoError(t, <-done)
	retries, _ := b.retries()
	t.Logf("finalize committed %v after it started, after %d retries", time.Since(start), retries[queue.ModeFinalize])
	assert.Positive(t, retries[queue.ModeFinalize])

	r, ok, err = b.q.Reserve(b.ctx, "w1", queue.ReserveOptions{Timeout: time.Minute, Block: 10 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, b.q.Finalize(b.ctx, r, queue.Result{Outcome: "passed", DurationMS: 1}))
	types := b.requireFinalizedOnce(units)
	assert.Equal(t, 2, types[events.TypeFinalized])
	b.requireOnOneNode()
}

// A build's slot is left half migrated for 5 s in the middle of the build,
// its meta on the target and other keys still on the source: every
// transition meets ASK or TRYAGAIN for those 5 s, far past what counting
// attempts rode out (MaxAttempts tries, backoff capped at BackoffCeil:
// about 1.4 s). Each one waits (nothing is finalized meanwhile) and
// commits once the migration ends; no worker exits. The workers' Timeout
// is longer than the migration, so that it is queue's ClusterWait, not
// the workers' own outage bound, that is put to the test.
func TestClusterSlotHeldMigratingMidBuild(t *testing.T) {
	const units, workers, hold = 40, 4, 5 * time.Second
	f := newFleet(t, "", unitNames(units))
	f.timeout = 15 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	before := readWorkerCounters(t)
	run := f.start(ctx, workers, flakyFunc(40*time.Millisecond, everyNth(7)))

	f.waitFinalized(ctx, run, 10)
	m, err := cl.BeginMigration(ctx, f.slot(), otherPrimary(t, f.slot()))
	require.NoError(t, err)
	finishOnFailure(t, m)
	moved := moveUntilGone(t, m, f.keys.Meta)
	source := cl.NodeClient(t, m.From)
	left, err := source.Do(ctx, source.B().ClusterCountkeysinslot().Slot(int64(f.slot())).Build()).AsInt64()
	require.NoError(t, err)
	held := time.Now()
	p, err := f.q.Progress(ctx)
	require.NoError(t, err)
	t.Logf("slot %d half migrated from %s to %s: %d keys moved (meta among them), %d left, at %d/%d units finalized",
		f.slot(), m.From, m.To, moved, left, p.Finalized, p.Total)
	during := readWorkerCounters(t)

	select {
	case <-run.done:
		t.Fatalf("the workers returned while the slot was half migrated: %v", run.errs)
	case <-time.After(hold):
	}
	q, err := f.q.Progress(ctx)
	require.NoError(t, err)
	assert.Equal(t, p.Finalized, q.Finalized, "while meta is away, no transition commits")
	during.logSince(t, fmt.Sprintf("workers while the slot was held half migrated for %v", time.Since(held).Round(time.Millisecond)))
	require.NoError(t, m.Finish(ctx))
	t.Logf("migration finished %v after meta moved", time.Since(held).Round(time.Millisecond))

	requireWorkersOK(t, run)
	before.logSince(t, "workers")
	types := f.requireFinalizedOnce(f.suite.Units)
	t.Logf("events: %v", types)
	assert.Equal(t, m.To, f.primary())
	f.requireOnOneNode()
	f.report(report.VerdictPassed)
}

// moveUntilGone moves the keys of m's slot one by one until key is no
// longer on the source (the source answers ASK for it), and returns how
// many it moved.
func moveUntilGone(t *testing.T, m *redistest.Migration, key string) int {
	t.Helper()
	source := cl.NodeClient(t, m.From)
	for moved := 0; ; {
		err := source.Do(t.Context(), source.B().Exists().Key(key).Build()).Error()
		if re, ok := rueidis.IsRedisErr(err); ok {
			_, ask := re.IsAsk()
			require.True(t, ask, "EXISTS %s on the source: %v", key, err)
			return moved
		}
		require.NoError(t, err)
		n, err := m.MoveKeys(t.Context(), 1)
		require.NoError(t, err)
		require.Equal(t, 1, n, "every key moved, and %s still answered on the source", key)
		moved += n
	}
}

// ClusterWait bounds how long a transition rides out a half-migrated slot,
// and the caller's context ends the wait sooner: neither is taken for
// contention. Once the migration ends, the same transition commits.
func TestClusterWaitBoundsAHeldMigration(t *testing.T) {
	b := newBuild(t, "")
	units := []string{"u1"}
	b.publish(manifestOf(units))
	const wait = 1500 * time.Millisecond
	q, err := queue.Open(b.client, b.id, queue.Options{TTL: ttl, ClusterWait: wait})
	require.NoError(t, err)
	r, ok, err := q.Reserve(b.ctx, "w1", queue.ReserveOptions{Timeout: time.Minute, Block: 10 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)
	m, err := cl.BeginMigration(b.ctx, b.slot(), otherPrimary(t, b.slot()))
	require.NoError(t, err)
	finishOnFailure(t, m)
	moveUntilGone(t, m, b.keys.Meta)

	start := time.Now()
	err = q.Heartbeat(b.ctx, r)
	took := time.Since(start)
	t.Logf("heartbeat on the held slot: %v after %v", err, took.Round(time.Millisecond))
	require.Error(t, err)
	assert.NotErrorIs(t, err, queue.ErrContention)
	var re *rueidis.RedisError
	require.ErrorAs(t, err, &re, "the last of the cluster's replies")
	_, ask := re.IsAsk()
	assert.True(t, ask || re.IsTryAgain(), "ASK or TRYAGAIN: %v", re)
	assert.GreaterOrEqual(t, took, wait)
	assert.Less(t, took, wait+time.Second)

	ctx, cancel := context.WithTimeout(b.ctx, 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = b.q.Heartbeat(ctx, r) // the default ClusterWait, 30 s
	took = time.Since(start)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the caller's deadline ends the wait")
	assert.Less(t, took, time.Second)

	require.NoError(t, m.Finish(b.ctx))
	require.NoError(t, q.Finalize(b.ctx, r, queue.Result{Outcome: "passed", DurationMS: 1}))
	b.requireFinalizedOnce(units)
}
