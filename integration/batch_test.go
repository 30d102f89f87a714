package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fence"
	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Requeues of one Build take turns before they reach Redis, and those that
// wait commit together (queue/batch.go), so the workers of one
// process never abort one another on the tail guard; requeues of two Builds
// (two processes) still race, and the guard keeps them correct.
func TestRequeuesTakeTurns(t *testing.T) {
	const workers, rounds = 8, 8
	for _, builds := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d builds", builds), func(t *testing.T) {
			e := newEnv(t)
			units := make([]string, workers*rounds)
			for i := range units {
				units[i] = fmt.Sprintf("u%03d", i)
			}
			e.publish(units, map[string]string{"max_requeues": "1", "requeue_tolerance": "1"})
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			open := make([]*queue.Build, builds)
			for i := range open {
				b, err := queue.OpenKeys(e.client, e.keys, queue.Options{TTL: ttlMS * time.Millisecond, MeterProvider: mp})
				require.NoError(t, err)
				open[i] = b
			}
			// Every unit is held before the first requeue: a requeued unit
			// would otherwise be read again from the priority stream.
			all := make([][]queue.Reservation, rounds)
			for r := range all {
				all[r] = make([]queue.Reservation, workers)
				for w := range all[r] {
					all[r][w] = e.reservation(fmt.Sprintf("w%02d-%d", w, r))
				}
			}
			newIDs := map[string]bool{}
			for _, held := range all {
				start := make(chan struct{})
				out := make([]queue.Requeued, workers)
				errs := make([]error, workers)
				var wg sync.WaitGroup
				for w := range held {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						out[w], errs[w] = open[w%builds].Requeue(e.ctx, held[w],
							queue.Result{DurationMS: 1, FailureSummary: "1 failure"}, queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1})
					}()
				}
				close(start)
				wg.Wait()
				for w := range held {
					require.NoError(t, errs[w], held[w].UnitID)
					require.True(t, out[w].Requeued, held[w].UnitID)
					require.False(t, newIDs[out[w].NewEntryID], "new entry id %s given twice", out[w].NewEntryID)
					newIDs[out[w].NewEntryID] = true
				}
			}
			require.Equal(t, fmt.Sprint(workers*rounds), e.hash(e.keys.Meta)["requeued_units_count"])
			n, err := e.admin.Do(e.ctx, e.admin.B().Xlen().Key(e.keys.Priority).Build()).AsInt64()
			require.NoError(t, err)
			require.EqualValues(t, workers*rounds, n)

			aborts := requeueAborts(t, reader)
			t.Logf("%d concurrent requeues over %d Builds: %d aborts", workers*rounds, builds, aborts)
			if builds == 1 {
				require.Zero(t, aborts, "requeues of one Build aborted one another")
			}
		})
	}
}

// requeueAborts sums hopper.transaction.aborts of mode requeue.
func requeueAborts(t *testing.T, reader *sdkmetric.ManualReader) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			data, ok := m.Data.(metricdata.Sum[int64])
			if !ok || m.Name != "hopper.transaction.aborts" {
				continue
			}
			for _, dp := range data.DataPoints {
				if mode, _ := dp.Attributes.Value("mode"); mode.AsString() == queue.ModeRequeue {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// execProxy forwards a client's connections to Redis and counts the EXECs
// they send, and their HGETs and HMGETs; when armed with n, it holds the
// next n EXECs back for a while (each on its own connection), so that the
// transitions arriving meanwhile queue up behind them.
type execProxy struct {
	*tcpProxy
	hold  time.Duration
	match []byte       // what a chunk to hold holds: EXEC, unless set before the first
	armed atomic.Int32 // chunks still to hold
	// before, when set, sees every chunk holding both EXEC and WATCH (a
	// commit carrying the next batch's first round trip) before it goes on.
	before        atomic.Pointer[func(chunk []byte)]
	held          chan struct{} // receives once per held EXEC
	execs         atomic.Int32
	hgets, hmgets atomic.Int32
	// writes counts the HSETs, XACKs, HINCRBYs and DELs.
	writes [4]atomic.Int32
}

// proxiedWrites names execProxy.writes, as sent on the wire.
var proxiedWrites = [4]string{"$4\r\nHSET\r\n", "$4\r\nXACK\r\n", "$7\r\nHINCRBY\r\n", "$3\r\nDEL\r\n"}

func newExecProxy(t testing.TB, hold time.Duration) *execProxy {
	t.Helper()
	p := &execProxy{hold: hold, match: []byte("EXEC\r\n"), held: make(chan struct{}, 64)}
	p.tcpProxy = newTCPProxy(t, srv.Addr(), func(down, up net.Conn) {
		go func() { _, _ = io.Copy(down, up); down.Close() }()
		go func() {
			defer up.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := down.Read(buf)
				if n > 0 {
					chunk := buf[:n]
					p.hgets.Add(int32(bytes.Count(chunk, []byte("$4\r\nHGET\r\n"))))
					p.hmgets.Add(int32(bytes.Count(chunk, []byte("$5\r\nHMGET\r\n"))))
					for i, w := range proxiedWrites {
						p.writes[i].Add(int32(bytes.Count(chunk, []byte(w))))
					}
					p.execs.Add(int32(bytes.Count(chunk, []byte("EXEC\r\n"))))
					if bytes.Contains(chunk, p.match) && p.armed.Add(-1) >= 0 {
						p.held <- struct{}{}
						time.Sleep(p.hold)
					}
					if fn := p.before.Load(); fn != nil && bytes.Contains(chunk, []byte("EXEC\r\n")) && bytes.Contains(chunk, []byte("WATCH\r\n")) {
						(*fn)(chunk)
					}
					if _, werr := up.Write(chunk); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	})
	return p
}

// Requeues that arrive while one commits wait, then commit together in one
// transaction, each with its own outcome: the build's tolerance is spent in
// arrival order across the batch, a lost reservation is refused alone, and
// two requeues of one worker never share a transaction (each is decided on
// the worker's record as read).
func TestRequeueBatch(t *testing.T) {
	const n = 16
	e := newEnv(t)
	units := make([]string, n)
	for i := range units {
		units[i] = fmt.Sprintf("u%02d", i)
	}
	// 16 units, tolerance 0.25: 4 may enter retry.
	e.publish(units, map[string]string{"max_requeues": "1", "requeue_tolerance": "0.25"})
	proxy := newExecProxy(t, 500*time.Millisecond)
	b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)

	held := make([]queue.Reservation, n)
	for i := range held {
		worker := fmt.Sprintf("w%02d", i)
		if i == n-1 {
			worker = "w01" // a second reservation of w01
		}
		held[i] = e.reservation(worker)
	}
	stale := held[5]
	require.NoError(t, e.build.Finalize(e.ctx, stale, queue.Result{Outcome: events.OutcomePassed}))
	execsBefore := proxy.execs.Load()

	out := make([]queue.Requeued, n)
	errs := make([]error, n)
	requeue := func(i int) {
		out[i], errs[i] = b.Requeue(e.ctx, held[i], queue.Result{DurationMS: 1, FailureSummary: "1 failure"},
			queue.Budgets{MaxRequeues: 1, RequeueTolerance: 0.25})
	}
	proxy.armed.Store(1)
	var wg sync.WaitGroup
	wg.Go(func() { requeue(0) })
	<-proxy.held // the first commit is on its way, and held
	for i := 1; i < n; i++ {
		wg.Go(func() { requeue(i) })
		time.Sleep(5 * time.Millisecond) // arriving in order
	}
	wg.Wait()

	// The first alone; then one batch of the 14 others that fit together;
	// then the second requeue of w01, which could not share w01's batch.
	assert.EqualValues(t, 3, proxy.execs.Load()-execsBefore, "commits of the 16 requeues")
	requeued := 0
	for i := range held {
		if i == 5 {
			require.ErrorIs(t, errs[i], queue.ErrStale, "the reservation finalized before")
			continue
		}
		require.NoError(t, errs[i], held[i].UnitID)
		if out[i].Requeued {
			requeued++
		}
		// Tolerance is spent in arrival order: the first four to ask.
		assert.Equal(t, i < 4, out[i].Requeued, "%s (requeue %d)", held[i].UnitID, i)
	}
	assert.Equal(t, 4, requeued)
	meta := e.hash(e.keys.Meta)
	assert.Equal(t, "4", meta["requeued_units_count"])
	assert.Equal(t, fmt.Sprint(1+n-1-4), meta["finalized_count"], "the stale one's finalize, and the 11 past the tolerance")
	assert.EqualValues(t, 2, e.worker("w01")["processed"], "both requeues of w01 counted")

	// The log reads as the requeues one after another.
	var ids []string
	for _, ev := range e.events() {
		if ev["type"] == "requeued" {
			ids = append(ids, ev["new_entry_id"].(string))
		}
	}
	require.Len(t, ids, 4)
	for i := 1; i < len(ids); i++ {
		assert.True(t, entryIDLess(ids[i-1], ids[i]), "new entry ids in order: %v", ids)
	}
}

// A requeue waiting for its turn whose caller gives up leaves the queue with
// the caller's error and writes nothing.
func TestRequeueWaitingIsCancelled(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, map[string]string{"max_requeues": "1", "requeue_tolerance": "1"})
	proxy := newExecProxy(t, 500*time.Millisecond)
	b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	first, second := e.reservation("w1"), e.reservation("w2")
	proxy.armed.Store(1)
	done := make(chan error, 1)
	go func() {
		_, err := b.Requeue(e.ctx, first, queue.Result{DurationMS: 1}, queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1})
		done <- err
	}()
	<-proxy.held
	ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	defer cancel()
	_, err = b.Requeue(ctx, second, queue.Result{DurationMS: 1}, queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, <-done)
	assert.Equal(t, "1", e.hash(e.keys.Meta)["requeued_units_count"], "only the first requeue was written")
	var stillPending bool
	for _, row := range e.pending(e.keys.Units) {
		stillPending = stillPending || row.ID == second.EntryID && row.Consumer == "w2"
	}
	assert.True(t, stillPending, "the second reservation is still w2's")
}

// entryIDLess orders two stream entry ids.
func entryIDLess(a, b string) bool {
	var am, as, bm, bs uint64
	_, err1 := fmt.Sscanf(a, "%d-%d", &am, &as)
	_, err2 := fmt.Sscanf(b, "%d-%d", &bm, &bs)
	return err1 == nil && err2 == nil && (am < bm || am == bm && as < bs)
}

// Fenced transitions of every mode batch alike: with every lane of a Build
// held up (four transactions in flight), the transitions arriving meanwhile
// wait, then share one transaction, each with its own outcome; a stale one
// is refused alone, and a second transition of a worker already in the batch
// waits for the next.
func TestFencedBatch(t *testing.T) {
	const n = 11
	e := newEnv(t)
	units := make([]string, n)
	for i := range units {
		units[i] = fmt.Sprintf("u%02d", i)
	}
	e.publish(units, nil)
	proxy := newExecProxy(t, 500*time.Millisecond)
	b, err := queue.OpenKeys(proxy.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	held := make([]queue.Reservation, n)
	for i := range held {
		held[i] = e.reservation(fmt.Sprintf("w%02d", i))
	}
	stale := held[7]
	require.NoError(t, e.build.Finalize(e.ctx, stale, queue.Result{Outcome: events.OutcomePassed}))
	before := proxy.execs.Load()

	// Four heartbeats hold the four lanes.
	proxy.armed.Store(4)
	var wg sync.WaitGroup
	blockers := make([]error, 4)
	for i := range blockers {
		wg.Go(func() { blockers[i] = b.Heartbeat(e.ctx, held[i]) })
	}
	for range 4 {
		<-proxy.held
	}
	pass := queue.Result{Outcome: events.OutcomePassed, DurationMS: 2}
	ops := []struct {
		name string
		run  func() error
	}{
		{"heartbeat w04", func() error { return b.Heartbeat(e.ctx, held[4]) }},
		{"finalize w05", func() error { return b.Finalize(e.ctx, held[5], pass) }},
		{"abandon w06", func() error { return b.Abandon(e.ctx, held[6], 99) }},
		{"finalize w07 (stale)", func() error { return b.Finalize(e.ctx, stale, pass) }},
		{"heartbeat w08", func() error { return b.Heartbeat(e.ctx, held[8]) }},
		{"finalize w09", func() error { return b.Finalize(e.ctx, held[9], pass) }},
		{"finalize w04", func() error { return b.Finalize(e.ctx, held[4], pass) }},
		{"requeue w10", func() error {
			_, err := b.Requeue(e.ctx, held[10], queue.Result{DurationMS: 1}, queue.Budgets{MaxRequeues: 1, RequeueTolerance: 1})
			return err
		}},
	}
	errs := make([]error, len(ops))
	for i, op := range ops {
		wg.Go(func() { errs[i] = op.run() })
		time.Sleep(5 * time.Millisecond) // arriving in order
	}
	wg.Wait()

	for i, err := range blockers {
		require.NoError(t, err, "blocker %d", i)
	}
	for i, op := range ops {
		if i == 3 {
			require.ErrorIs(t, errs[i], queue.ErrStale, op.name)
		} else {
			require.NoError(t, errs[i], op.name)
		}
	}
	// The four held; then one batch of w04..w10 but the second of w04; then
	// that one.
	assert.EqualValues(t, 6, proxy.execs.Load()-before, "commits")
	// Each commit read its workers' records in one HMGET, and the units'
	// states in one more when it held more than heartbeats: 4 heartbeats
	// alone, then 2 and 2, and the requeue's budgets one (meta's). Each of
	// the four lone heartbeats also sends, behind its EXEC, the reads of
	// its worker's likely finalize (kept reads: docs/design.md#watch), two
	// HMGETs each.
	assert.EqualValues(t, 4+2+2+1+4*2, proxy.hmgets.Load(), "HMGETs")
	assert.Zero(t, proxy.hgets.Load(), "HGETs")
	// The batch's writes of one kind to one key went as one command: an
	// HSET of the six workers' records; an XACK of the three entries
	// settled (w05, w09, and w10, whose requeue finalizes); a HINCRBY of
	// meta's finalized_count by 3; a DEL of the three entry guards retired.
	// The four heartbeats before and the finalize after sent their own.
	writes := make([]int32, len(proxy.writes))
	for i := range proxy.writes {
		writes[i] = proxy.writes[i].Load()
	}
	assert.Equal(t, []int32{4 + 1 + 1, 1 + 1, 1 + 1, 1 + 1}, writes, "HSETs, XACKs, HINCRBYs, DELs")
	// The merged DEL still came after each guard's SET: the guards of the
	// entries settled are gone, the heartbeated one's is there.
	prefix := strings.TrimSuffix(e.keys.Meta, "meta")
	for i, settled := range map[int]bool{4: true, 5: true, 8: false, 9: true, 10: true} {
		guard := fence.EntryKey(prefix, string(held[i].Stream), held[i].EntryID)
		n, err := e.do("EXISTS", guard).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, !settled, n == 1, "guard of w%02d's entry", i)
	}
	var pending []pendingRow
	for _, i := range []int{0, 1, 2, 3, 6, 8} {
		pending = append(pending, pendingRow{held[i].EntryID, held[i].WorkerID, 1})
	}
	assert.Equal(t, pending, e.pending(e.keys.Units), "the heartbeated and the abandoned entries stay pending, the rest were acked")
	meta := e.hash(e.keys.Meta)
	// w07 before; then w05, w09, w04, and w10, whose requeue is past the
	// build's max_requeues of 0.
	assert.Equal(t, "5", meta["finalized_count"])
	types := map[string]int{}
	for _, ev := range e.events() {
		types[ev["type"].(string)]++
	}
	assert.Equal(t, map[string]int{"delivered": n, "finalized": 5, "abandoned": 1}, types)
	assert.EqualValues(t, 1, e.worker("w04")["processed"], "w04 heartbeated, then finalized")
}
