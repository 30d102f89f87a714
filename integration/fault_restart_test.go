//go:build faults

package integration

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Redis restarts (docker restart: SIGTERM, start again) in the middle of a
// build, keeping its data (an AOF fsynced at every write). Every connection
// drops, so commits in flight lose their replies and workers in the middle
// of a call see errors: a worker running a unit rides it out through its
// heartbeat's retries; a worker whose own call fails exits 2 (Redis
// unreachable). Whatever each one did, once Redis is back the build
// completes (with new workers for the units of those that exited) and
// every unit is finalized exactly once.
func TestFaultRedisRestartedKeepingData(t *testing.T) {
	s := faultServer(t, persistentServerCmd())
	l := faultBuild(t, s)
	bin := buildFaultWorker(t)
	units := []string{"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"}
	flags := workerFlags{unitTime: 1500 * time.Millisecond, timeout: 4 * time.Second, connTimeout: time.Second}
	var procs []*workerProc
	for _, id := range []string{"r1", "r2", "r3"} {
		procs = append(procs, startWorker(t, bin, s.Addr(), l, id, units, flags))
	}
	for _, p := range procs {
		p.started(t, 20*time.Second)
	}
	time.Sleep(700 * time.Millisecond) // mid-unit, a heartbeat or two in

	start := time.Now()
	require.NoError(t, s.Restart(t.Context()))
	t.Logf("restart took %v", time.Since(start).Round(time.Millisecond))
	waitRedis(t, l.admin)
	st, err := l.build.Status(t.Context())
	require.NoError(t, err)
	require.True(t, st.Published, "the build's state survived the restart (AOF)")

	codes := map[string]int{}
	for _, p := range procs {
		code := p.wait(t, time.Minute)
		codes[p.id] = code
		assert.Contains(t, []int{0, 2}, code, "worker %s: %s", p.id, p.exitLine())
		if strings.Contains(p.stderr.String(), "heartbeat failed (") {
			t.Logf("worker %s heartbeat:\n%s", p.id, p.stderr)
		}
	}
	t.Logf("exit codes after the restart: %v", codes)
	// Workers that exited 2 left their units pending: new ones finish.
	for round := 1; ; round++ {
		p, err := l.build.Progress(t.Context())
		require.NoError(t, err)
		if p.Complete() {
			break
		}
		require.Less(t, round, 4, "the build does not complete")
		more := startWorker(t, bin, s.Addr(), l, "again-"+string(rune('0'+round)), units,
			workerFlags{unitTime: 50 * time.Millisecond, timeout: flags.timeout, connTimeout: flags.connTimeout})
		assert.Equal(t, 0, more.wait(t, time.Minute), "worker %s: %s", more.id, more.exitLine())
	}
	lost, doubled := requireExactlyOnce(t, l, units)
	r := reportOn(t, l.client, l.id, report.Options{})
	assert.Equal(t, report.VerdictPassed, r.Verdict, r.Headline)
	logFigures(t, faultFigures{faults: 1, builds: 1, lost: lost, doubled: doubled})
}

// Redis restarts empty in the middle of a build: everything it held is lost,
// the tombstone included. The running workers find the build's state missing
// (queue.ErrCorrupt), record it (a worker_error, phase redis) and exit 2; a
// report that was waiting sees meta vanish (expired, exit 3) and a report
// started afterwards finds nothing (missing, exit 2). Nothing re-creates the
// build's state: of the build's keys, only the attempt log reappears,
// holding just those worker_error events, and the acting workers' guard
// keys.
//
// What cannot be detected: with the tombstone gone too, "published and then
// lost" looks exactly like "never published". A worker that starts after the
// loss (a CI retry, a late job) finds neither meta nor tombstone, so it
// publishes the build afresh and runs every unit again, those finalized
// before the loss included, and a report started then judges that new
// incarnation alone. The units finalized before the loss ran twice, each
// incarnation finalizing them once; no key of the old build is left to tell.
// (With the tombstone kept but meta lost, as after an expiry, Join refuses
// with ErrBuildBurnt: TestMissingMetaIsCorruptionNeverReinitialization.)
func TestFaultRedisRestartedEmpty(t *testing.T) {
	s := faultServer(t, "")
	l := faultBuild(t, s)
	bin := buildFaultWorker(t)
	units := []string{"u1", "u2", "u3", "u4"}
	flags := workerFlags{unitTime: 2 * time.Second, timeout: 3 * time.Second, connTimeout: time.Second}
	procs := []*workerProc{
		startWorker(t, bin, s.Addr(), l, "e1", units, flags),
		startWorker(t, bin, s.Addr(), l, "e2", units, flags),
	}
	// A report waits for the build's completion meanwhile.
	type reported struct {
		r   *report.Report
		err error
	}
	waiting := make(chan reported, 1)
	go func() {
		r, err := report.Run(t.Context(), l.client, l.id, report.Options{
			PollInterval: 50 * time.Millisecond, InitTimeout: 20 * time.Second, Timeout: time.Minute, InactiveTimeout: time.Minute,
		})
		waiting <- reported{r, err}
	}()
	// Two units finalized, the other two in flight: then the data goes.
	require.Eventually(t, func() bool {
		if len(eventsOfType(l, events.TypeFinalized)) < 2 {
			return false
		}
		for _, p := range procs {
			if strings.Count(p.stdout.String(), "@start ") < 2 {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "two units finalized and two more started")
	before := buildKeys(t, l)
	t.Logf("keys before the restart: %v", before)
	require.NoError(t, s.Restart(t.Context()))
	waitRedis(t, l.admin)

	for _, p := range procs {
		assert.Equal(t, 2, p.wait(t, time.Minute), "worker %s: %s", p.id, p.exitLine())
		assert.Contains(t, p.exitLine(), "build state is missing", "worker %s detects the missing state", p.id)
	}
	// The report that was waiting sees meta vanish: expired. (Today it may
	// instead meet the dropped connection first and say unreachable, exit 2:
	// see TestFaultReportRidesOutARedisRestart.)
	got := <-waiting
	require.NoError(t, got.err)
	if got.r.Verdict == report.VerdictUnreachable {
		t.Logf("the waiting report met the restart itself: %s", got.r.Headline)
	} else {
		assert.Equal(t, report.VerdictExpired, got.r.Verdict, "the waiting report: %s", got.r.Headline)
		assert.Equal(t, report.ExitIncomplete, got.r.ExitCode)
	}
	after := reportOn(t, l.client, l.id, report.Options{InitTimeout: time.Second})
	assert.Equal(t, report.VerdictMissing, after.Verdict, after.Headline)
	assert.Equal(t, report.ExitInfrastructure, after.ExitCode)

	// Nothing re-created the build's state.
	k := l.keys
	for _, key := range []string{k.Meta, k.Units, k.Priority, k.UnitState, k.Workers, k.Leader, k.Exists} {
		assert.False(t, l.exists(key), "%s re-created", key)
	}
	for _, key := range buildKeys(t, l) {
		switch {
		case key == k.Attempts:
			assert.Positive(t, l.pttl(key), "the re-created log expires")
			for _, ev := range l.events() {
				assert.Equal(t, events.TypeWorkerError, ev["type"], "only worker errors are logged after the loss: %v", ev)
				assert.Equal(t, events.PhaseRedis, ev["phase"])
				assert.Equal(t, "queue.ErrCorrupt", ev["class"])
			}
		case strings.HasPrefix(key, "hopper:{"+l.id+"}:fence:worker:"):
			assert.Positive(t, l.pttl(key), "guard %s expires", key)
		default:
			t.Errorf("key %s appeared after the loss", key)
		}
	}
	werrs := eventsOfType(l, events.TypeWorkerError)
	assert.Len(t, werrs, 2, "each worker records the missing state once")

	// The limit: a worker that starts now cannot tell the build ever
	// existed. It publishes it again and runs every unit, those finalized
	// before the loss included (see the comment above).
	late := startWorker(t, bin, s.Addr(), l, "late", units, workerFlags{unitTime: 50 * time.Millisecond, timeout: flags.timeout})
	assert.Equal(t, 0, late.wait(t, time.Minute), "late worker: %s", late.exitLine())
	assert.Contains(t, late.stderr.String(), "initialized build "+l.id, "the late worker publishes the build again")
	assert.Equal(t, len(units), strings.Count(late.stdout.String(), "@start "), "and runs every unit again")
	lost, doubled := requireExactlyOnce(t, l, units) // within the new incarnation
	logFigures(t, faultFigures{faults: 1, builds: 1, lost: lost, doubled: doubled})
}

// buildKeys lists every key of the build, sorted.
func buildKeys(t *testing.T, l *lifecycle) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	keys, err := l.admin.Do(ctx, l.admin.B().Keys().Pattern("hopper:{"+l.id+"}:*").Build()).AsStrSlice()
	require.NoError(t, err)
	sort.Strings(keys)
	return keys
}

// A report waiting for a build while Redis restarts with its data (as in a
// failover, or a restart for an upgrade): the build completes and passes,
// and so should the report that was waiting for it. A dropped connection
// is not an unreachable Redis: "Redis unreachable, exit 2" (docs/cli.md#exit-codes)
// is for a Redis that does not come back.
//
// What it guards: the report's progress poll (report/read.go) reads meta,
// the workers and TIME in one round trip, and rueidis retries a pipeline
// after a network error only when every command in it is read-only; TIME is
// not flagged read-only, so without the report's own retry of a poll the
// first one that met the dropped connection ended the wait with
// VerdictUnreachable ("HGETALL meta: EOF"), exit 2, while the workers rode
// the restart out and finished the build.
func TestFaultReportRidesOutARedisRestart(t *testing.T) {
	s := faultServer(t, persistentServerCmd())
	l := faultBuild(t, s)
	bin := buildFaultWorker(t)
	units := []string{"u1", "u2", "u3", "u4"}
	flags := workerFlags{unitTime: time.Second, timeout: 4 * time.Second, connTimeout: time.Second}
	procs := []*workerProc{
		startWorker(t, bin, s.Addr(), l, "r1", units, flags),
		startWorker(t, bin, s.Addr(), l, "r2", units, flags),
	}
	for _, p := range procs {
		p.started(t, 20*time.Second)
	}
	type reported struct {
		r   *report.Report
		err error
	}
	waiting := make(chan reported, 1)
	go func() {
		r, err := report.Run(t.Context(), s.Client(t), l.id, report.Options{
			PollInterval: 20 * time.Millisecond, InitTimeout: 10 * time.Second, Timeout: time.Minute, InactiveTimeout: time.Minute,
		})
		waiting <- reported{r, err}
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, s.Restart(t.Context()))
	waitRedis(t, l.admin)
	for _, p := range procs {
		assert.Contains(t, []int{0, 2}, p.wait(t, time.Minute), "worker %s: %s", p.id, p.exitLine())
	}
	// A worker whose own call met the restart exited 2: another finishes.
	if p, err := l.build.Progress(t.Context()); assert.NoError(t, err) && !p.Complete() {
		more := startWorker(t, bin, s.Addr(), l, "again", units, workerFlags{unitTime: 50 * time.Millisecond, timeout: flags.timeout})
		assert.Equal(t, 0, more.wait(t, time.Minute), "worker again: %s", more.exitLine())
	}
	lost, doubled := requireExactlyOnce(t, l, units)
	got := <-waiting
	require.NoError(t, got.err)
	assert.Equal(t, report.VerdictPassed, got.r.Verdict, "the report that waited through the restart: %s", got.r.Headline)
	logFigures(t, faultFigures{faults: 1, builds: 1, lost: lost, doubled: doubled})
}
