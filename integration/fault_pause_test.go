//go:build faults

package integration

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Redis freezes (docker pause) for longer than both the client's timeout and
// the workers' Timeout, in the middle of a build, then comes back
// (docs/testing.md): a worker running a unit keeps retrying its heartbeat,
// says so once, gives up once Timeout has passed without a renewal and exits
// 2 when its unit ends, without settling it (the unit may have been
// reclaimed meanwhile) and without recording anything. Once Redis is back,
// new workers reclaim the abandoned units and the build completes: every
// unit finalized exactly once.
func TestFaultRedisPausedPastTheTimeout(t *testing.T) {
	s := faultServer(t, "")
	l := faultBuild(t, s)
	bin := buildFaultWorker(t)
	units := []string{"u1", "u2", "u3"}
	const (
		timeout     = 3 * time.Second
		connTimeout = time.Second
		pauseFor    = 7 * time.Second // > timeout + a heartbeat interval + connTimeout
	)

	// Three workers each take a unit that runs 6 s: longer than the
	// heartbeat's Timeout, shorter than the pause.
	slow := workerFlags{unitTime: 6 * time.Second, timeout: timeout, connTimeout: connTimeout}
	var first []*workerProc
	for _, id := range []string{"p1", "p2", "p3"} {
		first = append(first, startWorker(t, bin, s.Addr(), l, id, units, slow))
	}
	for _, p := range first {
		p.started(t, 20*time.Second)
	}
	time.Sleep(300 * time.Millisecond)

	pausedAt := time.Now()
	require.NoError(t, s.Pause(t.Context()))
	time.Sleep(pauseFor)
	require.NoError(t, s.Unpause(t.Context()))
	t.Logf("paused for %v", time.Since(pausedAt).Round(time.Millisecond))
	waitRedis(t, l.admin)

	for _, p := range first {
		code := p.wait(t, 30*time.Second)
		stderr := p.stderr.String()
		assert.Equal(t, 2, code, "worker %s exit code (%s)", p.id, p.exitLine())
		assert.Equal(t, 1, strings.Count(stderr, "heartbeat failed ("), "worker %s says once that its heartbeat fails:\n%s", p.id, stderr)
		assert.Contains(t, stderr, "); retrying for up to 3s", "worker %s", p.id)
		assert.Contains(t, p.exitLine(), "heartbeat lost", "worker %s gives up on its heartbeat", p.id)
		assert.Contains(t, p.stdout.String(), "@end ", "worker %s gives up once its unit has ended", p.id)
		assert.NotContains(t, p.stdout.String(), "ok u", "worker %s settled nothing", p.id)
	}
	assert.Empty(t, eventsOfType(l, events.TypeFinalized), "nothing was settled by the frozen workers")
	assert.Empty(t, eventsOfType(l, events.TypeWorkerError), "Redis unreachable: nothing recorded")

	// Redis is back: new workers reclaim the three held units and finish.
	quick := workerFlags{unitTime: 50 * time.Millisecond, timeout: timeout, connTimeout: connTimeout}
	second := []*workerProc{
		startWorker(t, bin, s.Addr(), l, "q1", units, quick),
		startWorker(t, bin, s.Addr(), l, "q2", units, quick),
	}
	for _, p := range second {
		assert.Equal(t, 0, p.wait(t, time.Minute), "worker %s: %s", p.id, p.exitLine())
	}
	lost, doubled := requireExactlyOnce(t, l, units)
	reclaimed := map[string]string{}
	for _, ev := range eventsOfType(l, events.TypeReclaimed) {
		reclaimed[ev["unit_id"].(string)] = ev["previous_worker_id"].(string)
	}
	assert.Len(t, reclaimed, 3, "each held unit is reclaimed once")
	for u, prev := range reclaimed {
		assert.Contains(t, []string{"p1", "p2", "p3"}, prev, "unit %s reclaimed from a worker that held it when Redis froze", u)
	}
	r := reportOn(t, l.client, l.id, report.Options{})
	assert.Equal(t, report.VerdictPassed, r.Verdict, r.Headline)
	logFigures(t, faultFigures{faults: 1, builds: 1, lost: lost, doubled: doubled})
}

// An idle worker (nothing left to take, waiting for lost work to come back)
// when Redis stops answering: "Redis unreachable: exit 2" (docs/cli.md#exit-codes).
// It may ride the outage out for up to its Timeout (worker/run.go), then
// must exit while Redis is still silent, as the busy workers do through
// their heartbeat.
//
// What it guards: rueidis puts no read deadline on a blocking command
// (ConnWriteTimeout is skipped for them), so a blocking XREADGROUP on a
// deadline-free context waits for as long as Redis stays silent, and a
// black-holed Redis would hang an idle worker forever; rueidis also retries
// read-only commands until the context ends (see
// TestBadInputRedisDoesNotAnswer). Reserve's blocking read is therefore
// bounded by Block plus a few seconds, and Status and Progress by a few
// seconds (queue/reserve.go, boundedRead).
func TestFaultIdleWorkerExitsWhenRedisStopsAnswering(t *testing.T) {
	s := faultServer(t, "")
	l := faultBuild(t, s)
	bin := buildFaultWorker(t)
	units := []string{"u1"}
	const (
		timeout     = 3 * time.Second
		connTimeout = time.Second
		pauseFor    = 12 * time.Second
	)
	f := workerFlags{unitTime: time.Minute, timeout: timeout, connTimeout: connTimeout}
	busy := startWorker(t, bin, s.Addr(), l, "busy", units, f)
	busy.started(t, 20*time.Second)
	idle := startWorker(t, bin, s.Addr(), l, "idle", units, f)
	_, ok := idle.stderr.waitFor(t.Context(), "joined build ", 20*time.Second)
	require.True(t, ok, "the idle worker joins")
	time.Sleep(500 * time.Millisecond) // reserving, finding nothing, again and again

	pausedAt := time.Now()
	require.NoError(t, s.Pause(t.Context()))
	var exitedAfter time.Duration
	for time.Since(pausedAt) < pauseFor && exitedAfter == 0 {
		if idle.exited() {
			exitedAfter = time.Since(pausedAt)
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, s.Unpause(t.Context()))
	busy.signal(t, syscall.SIGKILL)
	if exitedAfter == 0 {
		idle.signal(t, syscall.SIGKILL) // back to work now that Redis answers: no use waiting
		t.Errorf("the idle worker was still running after Redis had been silent for %v (timeout %v, client timeout %v)", pauseFor, timeout, connTimeout)
		return
	}
	t.Logf("the idle worker exited %v into the pause", exitedAfter.Round(time.Millisecond))
	assert.Equal(t, 2, idle.wait(t, 10*time.Second), "idle worker: %s", idle.exitLine())
	assert.Empty(t, eventsOfType(l, events.TypeWorkerError), "Redis unreachable: nothing recorded")
	logFigures(t, faultFigures{faults: 1})
}

// A worker frozen (SIGSTOP) in the middle of a unit for longer than the
// timeout: another worker reclaims the unit and finalizes it. When the
// frozen worker resumes (SIGCONT) and its unit ends, its heartbeat and its
// finalize are refused; the finalize is recorded as stale_rejected and its
// output discarded. The unit has exactly one final state.
func TestFaultWorkerStoppedPastTheTimeout(t *testing.T) {
	s := faultServer(t, "")
	l := faultBuild(t, s)
	bin := buildFaultWorker(t)
	units := []string{"slow", "u2", "u3", "u4"}
	flags := workerFlags{unitTime: 100 * time.Millisecond, slowUnit: "slow", slowTime: 2 * time.Second, timeout: 1500 * time.Millisecond}

	a := startWorker(t, bin, s.Addr(), l, "a", units, flags)
	require.Equal(t, "slow", a.started(t, 20*time.Second), "the first worker takes the first unit")
	a.signal(t, syscall.SIGSTOP)
	stoppedAt := time.Now()
	b := startWorker(t, bin, s.Addr(), l, "b", units, flags)

	fin := waitFinalized(t, l, "slow", 30*time.Second)
	assert.Equal(t, "b", fin["worker_id"])
	// Past a's unit time (2 s) too, so that its unit ends as soon as it runs.
	time.Sleep(max(0, 2500*time.Millisecond-time.Since(stoppedAt)))
	t.Logf("worker a stopped for %v", time.Since(stoppedAt).Round(time.Millisecond))
	a.signal(t, syscall.SIGCONT)

	assert.Equal(t, 0, a.wait(t, 30*time.Second), "worker a: %s", a.exitLine())
	assert.Equal(t, 0, b.wait(t, 30*time.Second), "worker b: %s", b.exitLine())
	assert.Contains(t, a.stderr.String(), "reservation for slow is stale; result discarded")
	assert.Contains(t, a.stdout.String(), "@end slow", "a's attempt did run to its end")
	assert.NotContains(t, a.stdout.String(), "ok slow", "a's stale output is discarded")

	stale := eventsOfType(l, events.TypeStaleRejected)
	require.Len(t, stale, 1)
	assert.Equal(t, "slow", stale[0]["unit_id"])
	assert.Equal(t, "a", stale[0]["worker_id"])
	assert.Equal(t, events.OperationFinalize, stale[0]["operation"])
	assert.EqualValues(t, 1, stale[0]["delivery_count"], "a's reservation, from before the reclaim")
	reclaimed := eventsOfType(l, events.TypeReclaimed)
	require.Len(t, reclaimed, 1)
	assert.Equal(t, "a", reclaimed[0]["previous_worker_id"])
	assert.Equal(t, "b", reclaimed[0]["worker_id"])

	lost, doubled := requireExactlyOnce(t, l, units)
	r := reportOn(t, l.client, l.id, report.Options{})
	assert.Equal(t, report.VerdictPassed, r.Verdict, r.Headline)
	s2 := r.Summary()
	assert.Equal(t, 1, s2.StaleRejections)
	logFigures(t, faultFigures{faults: 1, builds: 1, lost: lost, doubled: doubled})
}

// A worker killed (SIGKILL) in the middle of a unit: no settlement, no
// goodbye. Its unit stays pending under its name until it has been silent
// for the timeout; another worker reclaims it and finalizes it, once.
func TestFaultWorkerKilledMidUnit(t *testing.T) {
	s := faultServer(t, "")
	l := faultBuild(t, s)
	bin := buildFaultWorker(t)
	units := []string{"u1", "u2", "slow", "u4", "u5", "u6"}
	flags := workerFlags{unitTime: 200 * time.Millisecond, slowUnit: "slow", timeout: 1500 * time.Millisecond}
	procs := []*workerProc{
		startWorker(t, bin, s.Addr(), l, "k1", units, flags),
		startWorker(t, bin, s.Addr(), l, "k2", units, flags),
		startWorker(t, bin, s.Addr(), l, "k3", units, flags),
	}
	var victim *workerProc
	require.Eventually(t, func() bool {
		for _, p := range procs {
			if _, ok := p.stdout.find("@start slow 0"); ok {
				victim = p
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "no worker started the slow unit")
	victim.signal(t, syscall.SIGKILL)
	assert.Equal(t, -1, victim.wait(t, 10*time.Second), "killed by a signal")

	for _, p := range procs {
		if p != victim {
			assert.Equal(t, 0, p.wait(t, time.Minute), "worker %s: %s", p.id, p.exitLine())
		}
	}
	lost, doubled := requireExactlyOnce(t, l, units)
	reclaimed := eventsOfType(l, events.TypeReclaimed)
	require.Len(t, reclaimed, 1)
	assert.Equal(t, "slow", reclaimed[0]["unit_id"])
	assert.Equal(t, victim.id, reclaimed[0]["previous_worker_id"])
	fin := waitFinalized(t, l, "slow", time.Second)
	assert.NotEqual(t, victim.id, fin["worker_id"])
	assert.Equal(t, events.OutcomePassed, fin["outcome"])
	assert.EqualValues(t, 1, fin["reclaim_count"])

	r := reportOn(t, l.client, l.id, report.Options{})
	assert.Equal(t, report.VerdictPassed, r.Verdict, r.Headline)
	assert.Equal(t, report.UnitCounts{{UnitID: "slow", Count: 1}}, r.Summary().ReclaimCounts)
	logFigures(t, faultFigures{faults: 1, builds: 1, lost: lost, doubled: doubled})
}

// eventsOfType returns the build's log events of type typ.
func eventsOfType(l *lifecycle, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range l.events() {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}
