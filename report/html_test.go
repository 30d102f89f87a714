package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ev builds one log event the way the queue writes it.
func ev(t *testing.T, typ, unit, worker string, at int64, extra string) events.Event {
	t.Helper()
	raw := fmt.Sprintf(`{"type":%q,"unit_id":%q,"worker_id":%q,"retry_index":0,"reclaim_count":0,"ownership_generation":1,"at_ms":%d%s}`, typ, unit, worker, at, extra)
	e, err := events.Decode([]byte(raw))
	require.NoError(t, err, raw)
	return e
}

func TestAttempts(t *testing.T) {
	log := []events.Event{
		ev(t, "delivered", "a", "w1", 100, ""),
		ev(t, "finalized", "a", "w1", 300, `,"outcome":"passed","duration_ms":190,"reason":null`),
		ev(t, "delivered", "b", "w2", 110, ""),
		ev(t, "requeued", "b", "w2", 200, `,"duration_ms":80`),
		ev(t, "delivered", "b", "w1", 310, `,"retry_index":1`),
		ev(t, "finalized", "b", "w1", 400, `,"outcome":"failed","reason":"retry_budget_exhausted","retry_index":1`),
		ev(t, "delivered", "c", "w3", 120, ""),
		ev(t, "abandoned", "c", "w3", 500, `,"elapsed_ms":380`),
		ev(t, "reclaimed", "c", "w2", 900, `,"reclaim_count":1,"previous_worker_id":"w3"`),
		ev(t, "stale_rejected", "c", "w3", 950, `,"operation":"finalize"`),
		ev(t, "finalized", "c", "w2", 1000, `,"outcome":"passed","duration_ms":95,"reason":null,"reclaim_count":1`),
		ev(t, "delivered", "d", "w4", 130, ""),
		ev(t, "finalized", "d", "w5", 1100, `,"outcome":"failed","reason":"reclaim_budget_exhausted"`),
		ev(t, "delivered", "e", "w1", 1050, ""),
		{Type: "worker_error", WorkerID: "w9", AtMS: 1200},
	}
	got := Attempts(log)
	type row struct {
		Unit, Worker string
		Start, End   int64
		Ending       string
		Reclaimed    bool
		Abandoned    int64
		NoRun        bool
	}
	var rows []row
	for _, a := range got {
		rows = append(rows, row{a.Unit, a.Worker, a.StartMS, a.EndMS, a.End, a.Reclaimed, a.AbandonedAtMS, a.NoRun})
	}
	assert.Equal(t, []row{
		{"a", "w1", 100, 300, EndPassed, false, 0, false},
		{"b", "w2", 110, 200, EndRequeued, false, 0, false},
		{"c", "w3", 120, 950, EndStale, false, 500, false},
		{"d", "w4", 130, 1100, EndLost, false, 0, false},
		{"b", "w1", 310, 400, EndFailed, false, 0, false},
		{"c", "w2", 900, 1000, EndPassed, true, 0, false},
		{"e", "w1", 1050, 1200, EndRunning, false, 0, false},
		{"d", "w5", 1100, 1100, EndFailed, false, 0, true},
	}, rows)
	assert.Equal(t, "w3", got[5].PreviousWorkerID)
	assert.Equal(t, int64(1), got[4].RetryIndex)
}

func TestRender(t *testing.T) {
	evil := `<img src=x onerror=alert(1)>`
	log := []events.Event{
		ev(t, "delivered", "ok_test", "w1", 1000, ""),
		ev(t, "finalized", "ok_test", "w1", 1500, `,"outcome":"passed","duration_ms":500,"reason":null`),
		ev(t, "delivered", evil, "w2", 1000, ""),
		ev(t, "finalized", evil, "w2", 2000, `,"outcome":"failed","duration_ms":990,"reason":"test_failure","errors":[{"example_id":"x","description":"sh x","class":"exit status 1","message":"</pre><script>alert(2)</script>","backtrace":["at line 1"]},{"truncated":3}]`),
	}
	n := int64(2)
	r := Judge(Observation{
		BuildID: "b<1>", Presence: PresenceMeta,
		Meta:     Meta{State: StateReady, TotalUnits: 2, FinalizedCount: 2, ReadyAtMS: 900},
		Manifest: []string{"ok_test", evil}, FinalizedCount: &n, Events: log,
		Workers: []Worker{{ID: "w1", Processed: 1}, {ID: "w2", Processed: 1}, {ID: "idle-worker"}},
	}, Options{})
	page, err := r.HTML()
	require.NoError(t, err)
	html := string(page)
	assert.Contains(t, html, `<span class="verdict failed">failed</span>`)
	assert.Contains(t, html, `hopper build <code>b&lt;1&gt;</code>`)
	assert.NotContains(t, html, evil, "unit ids are escaped")
	assert.NotContains(t, html, "<script>alert", "messages are escaped")
	assert.Contains(t, html, "&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;")
	assert.Contains(t, html, "and 3 more error(s), not kept")
	assert.Contains(t, html, `data-worker="idle-worker"`, "an idle worker has its row")
	assert.Equal(t, 2, strings.Count(html, `<rect class="bar `))
	assert.Contains(t, html, `class="bar passed"`)
	assert.Contains(t, html, `class="bar failed"`)
	for _, ref := range []string{`src="http`, `href="http`, "<link "} {
		assert.NotContains(t, html, ref)
	}
}

// A worker's processed count prints in full however large, and a Report
// built by hand, without a log, renders rather than panics.
func TestRenderWorkersAndBareReport(t *testing.T) {
	log := []events.Event{
		ev(t, "delivered", "a", "w1", 1000, ""),
		ev(t, "finalized", "a", "w1", 1500, `,"outcome":"passed","duration_ms":500,"reason":null`),
	}
	n := int64(1)
	r := Judge(Observation{
		BuildID: "b1", Presence: PresenceMeta,
		Meta:     Meta{State: StateReady, TotalUnits: 1, FinalizedCount: 1, ReadyAtMS: 900},
		Manifest: []string{"a"}, FinalizedCount: &n, Events: log,
		Workers: []Worker{{ID: "w1", Processed: 1234567}, {ID: "w2", Processed: 2.5}},
	}, Options{})
	page, err := r.HTML()
	require.NoError(t, err)
	html := string(page)
	assert.Contains(t, html, `<td class="num">1234567</td>`)
	assert.Contains(t, html, `<td class="num">2.5</td>`)
	assert.NotContains(t, html, "e+06")

	page, err = (&Report{BuildID: "by-hand", Verdict: VerdictPassed}).HTML()
	require.NoError(t, err)
	assert.Contains(t, string(page), "by-hand")
}

// A flaky unit is shown with the errors of the attempts that failed before
// it passed, taken from its requeued events.
func TestRenderFlakyErrors(t *testing.T) {
	log := []events.Event{
		ev(t, "delivered", "flaky_test", "w1", 1000, ""),
		ev(t, "requeued", "flaky_test", "w1", 1200, `,"retry_index":1,"ownership_generation":2,"previous_retry_index":0,"duration_ms":190,"failure_summary":"1 failure(s)","errors":[{"example_id":"flaky_test","description":"sh flaky_test","class":"exit status 1","message":"not ok - the service answered: expected yes, got <timeout>","backtrace":[]}]`),
		ev(t, "delivered", "flaky_test", "w2", 1300, `,"retry_index":1,"ownership_generation":2`),
		ev(t, "requeued", "flaky_test", "w2", 1400, `,"retry_index":2,"ownership_generation":3,"previous_retry_index":1,"duration_ms":90,"failure_summary":null,"errors":null`),
		ev(t, "delivered", "flaky_test", "w1", 1500, `,"retry_index":2,"ownership_generation":3`),
		ev(t, "finalized", "flaky_test", "w1", 1600, `,"outcome":"passed","duration_ms":95,"reason":null,"retry_index":2,"ownership_generation":3`),
	}
	n := int64(1)
	r := Judge(Observation{
		BuildID: "b1", Presence: PresenceMeta,
		Meta:     Meta{State: StateReady, TotalUnits: 1, FinalizedCount: 1, ReadyAtMS: 900},
		Manifest: []string{"flaky_test"}, FinalizedCount: &n, Events: log,
	}, Options{})
	page, err := r.HTML()
	require.NoError(t, err)
	html := string(page)
	assert.Contains(t, html, "<h2>Flaky units (passed after a retry)</h2>")
	assert.Contains(t, html, `<div class="failure flaky"><h3>flaky_test</h3>`)
	assert.Contains(t, html, "passed after 2 retries")
	assert.Contains(t, html, "attempt 1 failed, worker <code>w1</code> <span class=\"muted\">(1 failure(s))</span>")
	assert.Contains(t, html, "<b>exit status 1</b> <code>sh flaky_test</code>")
	assert.Contains(t, html, "<pre>not ok - the service answered: expected yes, got &lt;timeout&gt;</pre>")
	assert.Contains(t, html, "attempt 2 failed, worker <code>w2</code></div>\n<div class=\"muted\">no errors recorded</div>")
	assert.NotContains(t, html, "<h2>Failed units</h2>")
}

func TestNiceStep(t *testing.T) {
	assert.Equal(t, "500ms", fmtDuration(niceStep(2500*1e6, 6)))
	assert.Equal(t, "1m00s", fmtDuration(niceStep(5*60*1e9, 6)))
}

// A damaged errors payload still shows what it can: an entry that is not an
// object is left out rather than shown as an empty error, a field of the
// wrong type is left empty, and a payload that is not an array shows nothing.
func TestErrorPayloadLenient(t *testing.T) {
	got := errorPayload([]byte(`[1, "x", null, [], {"class":"C","message":"m","backtrace":"not a list"}, {"truncated":2}]`))
	assert.Equal(t, errorsView{Errors: []events.ErrorEntry{{Class: "C", Message: "m"}}, Truncated: 2}, got)
	assert.Equal(t, errorsView{}, errorPayload([]byte(`{"class":"C"}`)))
	assert.Equal(t, errorsView{}, errorPayload(nil))
}

// Bars carry their unit's name where it fits, and a slot that finished
// early shows its idle tail up to the build's end.
func TestTimelineLabelsAndIdleTail(t *testing.T) {
	log := []events.Event{
		ev(t, "delivered", "long_unit_name", "w1", 1000, ""),
		ev(t, "delivered", "a", "w2", 1000, ""),
		ev(t, "finalized", "a", "w2", 2000, `,"outcome":"passed","duration_ms":1000,"reason":null`),
		ev(t, "delivered", "tiny", "w2", 2000, ""),
		ev(t, "finalized", "tiny", "w2", 2010, `,"outcome":"passed","duration_ms":10,"reason":null`),
		ev(t, "finalized", "long_unit_name", "w1", 10000, `,"outcome":"passed","duration_ms":9000,"reason":null`),
	}
	n := int64(3)
	r := Judge(Observation{
		BuildID: "b", Presence: PresenceMeta,
		Meta:     Meta{State: StateReady, TotalUnits: 3, FinalizedCount: 3, ReadyAtMS: 1000},
		Manifest: []string{"long_unit_name", "a", "tiny"}, FinalizedCount: &n, Events: log,
	}, Options{})
	page, err := r.HTML()
	require.NoError(t, err)
	html := string(page)
	assert.Contains(t, html, `<text class="unit" x="173" y="28" dy="10.5">long_unit_name</text>`)
	assert.Regexp(t, `<text class="unit"[^>]*>a</text>`, html, "a 1s bar of 9s holds a one-letter name")
	assert.NotRegexp(t, `<text class="unit"[^>]*>tiny</text>`, html, "a 10ms bar holds no name")
	assert.Equal(t, 1, strings.Count(html, `<rect class="idle"`), "w2 waited for w1; w1 ran to the end")
	assert.Contains(t, html, "w2 idle for 8.0s at the end, waiting for the last unit")
}
