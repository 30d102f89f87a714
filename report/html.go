package report

// This file renders a build's report as one self-contained HTML file
// (--html-out): the verdict, the failed, flaky and abandoned units with
// their errors, and a timeline with one row per worker and one bar per
// attempt, coloured by how it ended, retries and reclaims marked. It needs
// no network: styles, the timeline (inline SVG) and the little script that
// highlights a unit's attempts are all in the file.

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hopper-queue/hopper/events"
)

//go:embed html.tmpl
var pageTemplate string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": func(ms float64) string { return fmtDuration(time.Duration(ms * float64(time.Millisecond))) },
}).Parse(pageTemplate))

// Geometry of the timeline, in SVG user units.
const (
	labelWidth = 170
	plotWidth  = 1000
	rowHeight  = 22
	barHeight  = 14
	axisHeight = 24
	minBar     = 2
)

// HTML returns the report as one self-contained HTML page.
func (r *Report) HTML() ([]byte, error) {
	v := pageView(r)
	var buf bytes.Buffer
	if err := page.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("report: HTML: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteHTML writes the HTML page to path, creating its parent folders;
// like the report's other files, it is written whole or not at all
// (WriteFile).
func (r *Report) WriteHTML(path string) error {
	b, err := r.HTML()
	if err != nil {
		return err
	}
	return WriteFile(path, b)
}

// view is what the template shows.
type view struct {
	BuildID, Verdict, VerdictClass, Headline string
	ExitCode                                 int
	Details                                  []string
	Counts                                   []count
	Failed                                   []failedView
	Flaky                                    []flakyView
	Abandoned, NeverFinalized                []string
	WorkerErrors                             []string
	Slowest                                  []slowView
	Timeline                                 *timelineView
	Workers                                  []workerView
}

type count struct {
	Label string
	N     int
	Class string
}

// errorsView is an errors payload as shown: the entries kept, and how many
// were dropped to keep the payload small.
type errorsView struct {
	Errors    []events.ErrorEntry
	Truncated int
}

type failedView struct {
	Unit, Reason, Worker string
	errorsView
}

// flakyView is a unit that passed on a retry, with the failures that made
// it retry: a flaky unit is only worth fixing once one can see how it fails.
type flakyView struct {
	Unit     string
	Retries  int64
	Failures []retriedView
}

// retriedView is one failed attempt that was put back for a retry.
type retriedView struct {
	Attempt int64 // as the worker's output header counts them, from 1
	Worker  string
	Summary string
	errorsView
}

type slowView struct {
	Unit, Worker, End string
	DurationMS        float64
}

type workerView struct {
	ID string
	// Processed is the worker record's count as written, in full: a
	// float64 in a template would print a million as 1e+06.
	Processed string
	Attempts  int
	Busy      string
}

type timelineView struct {
	Width, Height, PlotX, PlotWidth int
	Rows                            []rowView
	Ticks                           []tickView
	Legend                          []legendView
	Span                            string
}

type rowView struct {
	Worker   string
	Y, TextY int
	Bars     []barView
	Idle     *idleView
}

// idleView is a slot's idle tail: from its last attempt's end to the
// build's, the time it waited for the last unit.
type idleView struct {
	X, Y, W, H float64
	Title      string
}

type barView struct {
	X, Y, W, H    float64
	Class, Unit   string
	Title         string
	Retry         int64
	Reclaimed     bool
	AbandonX      float64
	AbandonY1     float64
	AbandonY2     float64
	Abandoned     bool
	LabelX        float64
	ShowRetryText bool
	// Label is the unit's name (after its retry, r1 ...), drawn on the bar
	// when it fits.
	Label     string
	ShowLabel bool
}

type tickView struct {
	X     float64
	Label string
}

type legendView struct{ Class, Label string }

// pageView is the page's view of r.
func pageView(r *Report) view {
	v := view{
		BuildID: r.BuildID, Verdict: string(r.Verdict), Headline: r.Headline, ExitCode: r.ExitCode,
		Details: r.Details, VerdictClass: "other",
	}
	switch r.Verdict {
	case VerdictPassed:
		v.VerdictClass = "passed"
	case VerdictFailed:
		v.VerdictClass = "failed"
	}
	log := r.Log
	if log == nil {
		log = NewLog(nil) // a Report not made by Judge: render it empty
	}
	attempts := Attempts(log.Events())
	v.addProblems(r, log)
	v.addCounts(r, log, attempts)
	v.Slowest = slowest(attempts, 10)
	v.Timeline = timelineOf(r, attempts)
	v.Workers = workerViews(r, v.Timeline.Rows, attempts)
	return v
}

// addProblems fills in the failed, flaky, abandoned and never finalized
// units, and the workers' errors.
func (v *view) addProblems(r *Report, log *Log) {
	for _, f := range log.Failed() {
		fv := failedView{Unit: f.UnitID, Worker: f.WorkerID, Reason: "(no reason)"}
		if f.Reason != nil {
			fv.Reason = *f.Reason
		}
		fv.errorsView = errorPayload(f.Errors)
		v.Failed = append(v.Failed, fv)
	}
	retries := log.RetryCounts()
	retried := retriedAttempts(log.Events())
	for _, u := range log.Flaky() {
		n, _ := retries.Get(u)
		v.Flaky = append(v.Flaky, flakyView{Unit: u, Retries: n, Failures: retried[u]})
	}
	v.Abandoned = log.Abandoned()
	for _, u := range r.NeverFinalized() {
		line := u.UnitID + " (never delivered)"
		if u.LastWorkerID != nil {
			line = u.UnitID + " (last worker " + *u.LastWorkerID + ")"
		}
		v.NeverFinalized = append(v.NeverFinalized, line)
	}
	for _, e := range log.WorkerErrors() {
		v.WorkerErrors = append(v.WorkerErrors, fmt.Sprintf("%s %s %s: %s", e.WorkerID, e.Phase, e.Class, e.Message))
	}
}

// addCounts fills in the counts at the top of the page, after addProblems.
func (v *view) addCounts(r *Report, log *Log, attempts []Attempt) {
	var total, passed int
	if r.Meta != nil {
		total = int(r.Meta.TotalUnits)
	}
	for _, a := range attempts {
		if a.End == EndPassed {
			passed++ // a unit is finalized once
		}
	}
	v.Counts = []count{
		{"units", total, ""},
		{"passed", passed, "passed"},
		{"failed", len(v.Failed), "failed"},
		{"flaky", len(v.Flaky), "requeued"},
		{"never finalized", len(v.NeverFinalized), "running"},
		{"retries", int(sumCounts(log.RetryCounts())), "requeued"},
		{"reclaims", int(sumCounts(log.ReclaimCounts())), "lost"},
		{"abandoned", len(v.Abandoned), "stale"},
		{"attempts", len(attempts), ""},
	}
}

// slowest is the n slowest attempts that ran.
func slowest(attempts []Attempt, n int) []slowView {
	ran := make([]Attempt, 0, len(attempts))
	for _, a := range attempts {
		if !a.NoRun {
			ran = append(ran, a)
		}
	}
	sort.SliceStable(ran, func(i, j int) bool { return attemptLength(ran[i]) > attemptLength(ran[j]) })
	var out []slowView
	for _, a := range ran[:min(len(ran), n)] {
		out = append(out, slowView{Unit: a.Unit, Worker: a.Worker, End: a.End, DurationMS: attemptLength(a)})
	}
	return out
}

// workerViews is the workers' table, one line per timeline row.
func workerViews(r *Report, rows []rowView, attempts []Attempt) []workerView {
	var out []workerView
	for _, row := range rows {
		wv := workerView{ID: row.Worker, Processed: "0"}
		var busy float64
		for _, a := range attempts {
			if a.Worker == row.Worker {
				wv.Attempts++
				busy += float64(a.EndMS - a.StartMS)
			}
		}
		for _, w := range r.Workers {
			if w.ID == row.Worker {
				wv.Processed = strconv.FormatFloat(w.Processed, 'f', -1, 64)
			}
		}
		wv.Busy = fmtDuration(time.Duration(busy) * time.Millisecond)
		out = append(out, wv)
	}
	return out
}

// errorPayload decodes an errors payload leniently, as the report must show
// a failure even when its details are damaged: a field of the wrong type is
// left empty, and a payload that is not an array of objects gives nothing.
func errorPayload(raw json.RawMessage) errorsView {
	var ev errorsView
	var entries []json.RawMessage
	_ = json.Unmarshal(raw, &entries)
	for _, entry := range entries {
		// An entry that is not an object (a number, a string, null) is
		// skipped, not shown as an empty error.
		var fields map[string]json.RawMessage
		if json.Unmarshal(entry, &fields) != nil || fields == nil {
			continue
		}
		if n, ok := fields["truncated"]; ok && len(fields) == 1 {
			_ = json.Unmarshal(n, &ev.Truncated)
			continue
		}
		b, _ := json.Marshal(fields)
		var e events.ErrorEntry
		_ = json.Unmarshal(b, &e)
		ev.Errors = append(ev.Errors, e)
	}
	return ev
}

// retriedAttempts maps each unit to its failed attempts that were put back
// for a retry, in log order, from the requeued events: each carries the
// failed attempt's errors and summary.
func retriedAttempts(log []events.Event) map[string][]retriedView {
	out := map[string][]retriedView{}
	for _, e := range log {
		if e.Type != events.TypeRequeued || !e.UnitScoped() {
			continue
		}
		// The event's head counts the retry it starts: the attempt that
		// failed is the one before.
		rv := retriedView{Attempt: max(e.RetryIndex+e.ReclaimCount, 1), Worker: e.WorkerID, errorsView: errorPayload(e.Errors)}
		if e.FailureSummary != nil {
			rv.Summary = *e.FailureSummary
		}
		out[*e.UnitID] = append(out[*e.UnitID], rv)
	}
	return out
}

// attemptLength is how long an attempt ran: the worker's own measure when it
// settled the attempt, else the time between its events.
func attemptLength(a Attempt) float64 {
	if a.DurationMS > 0 {
		return a.DurationMS
	}
	return float64(a.EndMS - a.StartMS)
}

func sumCounts(c UnitCounts) int64 {
	var n int64
	for _, uc := range c {
		n += uc.Count
	}
	return n
}

func timelineOf(r *Report, attempts []Attempt) *timelineView {
	// Rows: every worker that attempted something or has a record, by id.
	seen := map[string]bool{}
	var workers []string
	for _, a := range attempts {
		if !seen[a.Worker] {
			seen[a.Worker] = true
			workers = append(workers, a.Worker)
		}
	}
	for _, w := range r.Workers {
		if !seen[w.ID] {
			seen[w.ID] = true
			workers = append(workers, w.ID)
		}
	}
	sort.Strings(workers)
	row := map[string]int{}
	for i, w := range workers {
		row[w] = i
	}

	var t0, t1 int64
	if r.Meta != nil && r.Meta.ReadyAtMS > 0 {
		t0, t1 = r.Meta.ReadyAtMS, r.Meta.ReadyAtMS
	}
	for _, a := range attempts {
		if t0 == 0 || a.StartMS < t0 {
			t0 = a.StartMS
		}
		t1 = max(t1, a.EndMS)
	}
	span := float64(max(t1-t0, 1))
	x := func(ms int64) float64 { return labelWidth + float64(ms-t0)/span*plotWidth }

	tv := &timelineView{
		PlotX: labelWidth, PlotWidth: plotWidth, Width: labelWidth + plotWidth + 10,
		Height: axisHeight + max(len(workers), 1)*rowHeight + 6,
		Span:   fmtDuration(time.Duration(t1-t0) * time.Millisecond),
	}
	for i, w := range workers {
		y := axisHeight + i*rowHeight
		tv.Rows = append(tv.Rows, rowView{Worker: w, Y: y, TextY: y + rowHeight/2 + 4})
	}
	for _, a := range attempts {
		i := row[a.Worker]
		bx, ex := x(a.StartMS), x(a.EndMS)
		w := math.Max(ex-bx, minBar)
		b := barView{
			X: bx, W: w, Y: float64(axisHeight + i*rowHeight + (rowHeight-barHeight)/2), H: barHeight,
			Class: a.End, Unit: a.Unit, Retry: a.RetryIndex, Reclaimed: a.Reclaimed,
			Title: attemptTitle(a),
		}
		if a.AbandonedAtMS > 0 {
			b.Abandoned, b.AbandonX = true, x(a.AbandonedAtMS)
			b.AbandonY1, b.AbandonY2 = b.Y-3, b.Y+b.H+3
		}
		b.LabelX = bx + 3
		b.Label = a.Unit
		if a.RetryIndex > 0 {
			b.Label = fmt.Sprintf("r%d %s", a.RetryIndex, a.Unit)
		}
		b.ShowLabel = fits(b.Label, w)
		b.ShowRetryText = !b.ShowLabel && a.RetryIndex > 0 && w >= 18
		tv.Rows[i].Bars = append(tv.Rows[i].Bars, b)
	}
	idleTails(tv, attempts, row, t1, x)
	// About six ticks, on round durations.
	step := niceStep(time.Duration(t1-t0)*time.Millisecond, 6)
	for d := time.Duration(0); d <= time.Duration(t1-t0)*time.Millisecond; d += step {
		tv.Ticks = append(tv.Ticks, tickView{X: x(t0 + d.Milliseconds()), Label: fmtDuration(d)})
	}
	tv.Legend = []legendView{
		{EndPassed, "passed"}, {EndFailed, "failed"}, {EndRequeued, "failed, retried"},
		{EndLost, "lost (worker went silent, unit reclaimed)"}, {EndStale, "result refused (reclaimed meanwhile)"},
		{EndRunning, "unfinished"}, {"idle", "idle tail (waiting for the last unit)"},
	}
	return tv
}

func attemptTitle(a Attempt) string {
	var b strings.Builder
	b.WriteString(a.Unit)
	switch {
	case a.NoRun:
		fmt.Fprintf(&b, ": finalized %s (%s) without running", a.End, a.Reason)
	case a.End == EndRequeued:
		fmt.Fprintf(&b, ": failed in %s, retried", fmtDuration(time.Duration(attemptLength(a))*time.Millisecond))
	case a.End == EndLost:
		fmt.Fprintf(&b, ": lost after %s, reclaimed by another worker", fmtDuration(time.Duration(attemptLength(a))*time.Millisecond))
	case a.End == EndStale:
		fmt.Fprintf(&b, ": finished after %s, result refused (reclaimed meanwhile)", fmtDuration(time.Duration(attemptLength(a))*time.Millisecond))
	case a.End == EndRunning:
		fmt.Fprintf(&b, ": no end recorded (%s so far)", fmtDuration(time.Duration(attemptLength(a))*time.Millisecond))
	default:
		fmt.Fprintf(&b, ": %s in %s", a.End, fmtDuration(time.Duration(attemptLength(a))*time.Millisecond))
		if a.Reason != "" {
			fmt.Fprintf(&b, " (%s)", a.Reason)
		}
	}
	fmt.Fprintf(&b, "\nworker %s", a.Worker)
	if g := 1 + a.RetryIndex + a.ReclaimCount; g > 1 {
		fmt.Fprintf(&b, ", attempt %d", g)
	}
	if a.RetryIndex > 0 {
		fmt.Fprintf(&b, ", retry %d", a.RetryIndex)
	}
	if a.Reclaimed {
		b.WriteString(", reclaimed")
		if a.PreviousWorkerID != "" {
			b.WriteString(" from " + a.PreviousWorkerID)
		}
	}
	if a.AbandonedAtMS > 0 {
		fmt.Fprintf(&b, "\nabandoned after %s (--max-unit-duration)", fmtDuration(time.Duration(a.AbandonedAtMS-a.StartMS)*time.Millisecond))
	}
	return b.String()
}

// niceStep picks a round tick interval giving about n ticks over d.
func niceStep(d time.Duration, n int) time.Duration {
	for _, s := range []time.Duration{
		100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 6 * time.Hour,
	} {
		if d/s <= time.Duration(n) {
			return s
		}
	}
	return 24 * time.Hour
}

// fmtDuration is FormatDuration, but in milliseconds below a second: a
// timeline's short attempts would all read 0.0s.
func fmtDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", max(d, 0).Milliseconds())
	}
	return FormatDuration(d)
}

// charWidth is the width of one character of a bar's label (11px
// monospace) in SVG user units.
const charWidth = 6.7

// fits reports whether label can be written on a bar of width w.
func fits(label string, w float64) bool {
	return float64(utf8.RuneCountInString(label))*charWidth+6 <= w
}

// idleTails gives each row that ran something its idle tail: from its
// last attempt's end to t1, the end of the build, when it is long enough
// to see.
func idleTails(tv *timelineView, attempts []Attempt, row map[string]int, t1 int64, x func(int64) float64) {
	last := map[string]int64{}
	for _, a := range attempts {
		last[a.Worker] = max(last[a.Worker], a.EndMS)
	}
	for w, end := range last {
		bx, ex := x(end), x(t1)
		if ex-bx < minBar {
			continue
		}
		i := row[w]
		tv.Rows[i].Idle = &idleView{X: bx, W: ex - bx, Y: float64(axisHeight + i*rowHeight + (rowHeight-barHeight)/2), H: barHeight,
			Title: fmt.Sprintf("%s idle for %s at the end, waiting for the last unit", w, fmtDuration(time.Duration(t1-end)*time.Millisecond))}
	}
}
