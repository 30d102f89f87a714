package report

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/events"
)

// ExitCode is the process exit code of the verdict.
func (v Verdict) ExitCode() int {
	switch v {
	case VerdictPassed:
		return ExitOK
	case VerdictFailed:
		return ExitTestFailure
	case VerdictIncomplete, VerdictInitFailed, VerdictExpired:
		return ExitIncomplete
	}
	return ExitInfrastructure
}

// Presence is what waiting for the build to appear found.
type Presence int

const (
	// PresenceNone: neither meta nor the tombstone showed before the init
	// timeout: the build was never published.
	PresenceNone Presence = iota
	// PresenceTombstone: the tombstone is there but meta is not: the build
	// was published and its state has since expired or been evicted.
	PresenceTombstone
	// PresenceMeta: the build's meta is there.
	PresenceMeta
)

// StallCause says why waiting for completion gave up.
type StallCause string

const (
	StallTimeout  StallCause = "timeout"  // Options.Timeout passed
	StallInactive StallCause = "inactive" // no sign of life for Options.InactiveTimeout
	// StallInterrupted: the run was stopped (Options.Interrupted).
	StallInterrupted StallCause = "interrupted"
)

// Stall records that waiting for completion gave up before every unit was
// finalized.
type Stall struct {
	Cause StallCause
	// Idle is how long no worker had shown a sign of life (StallInactive).
	Idle time.Duration
}

// Observation is everything the report saw of a build once it stopped
// waiting: the input of Judge. Run fills it from Redis; tests and other
// callers can build one by hand.
type Observation struct {
	BuildID  string
	Presence Presence
	// Meta is valid when Presence is PresenceMeta.
	Meta Meta
	// Manifest is the unit ids in publishing order (Meta.UnitIDs, or the
	// units stream when meta does not list them).
	Manifest []string
	// FinalizedCount is meta's finalized_count as last read while waiting
	// for completion; nil when that wait never ran.
	FinalizedCount *int64
	Workers        []Worker
	// Events is the whole attempt log in order (empty before the build was
	// ready).
	Events []events.Event
	// Stall is set when waiting for completion gave up.
	Stall *Stall
	// TestResults are the per-test results kept beside the log (nil when
	// none were read).
	TestResults TestResults
	// Err is set when reading failed: ErrUnreachable or ErrCorrupt, wrapped.
	// It decides the verdict before anything else.
	Err error
}

// Report is a build's verdict and everything the renderings show. Judge and
// Run return one; it is not modified afterwards and is safe for concurrent
// reads.
type Report struct {
	BuildID string
	// State is meta's state, "" when there is no meta.
	State    string
	Verdict  Verdict
	ExitCode int
	// Headline is the one-line reason for the verdict (the summary's
	// "message"); Details are the lines under it (failed units, unfinalized
	// units, load errors, invariant violations).
	Headline string
	Details  []string
	// Meta is nil when there is no meta to read.
	Meta           *Meta
	Manifest       []string
	FinalizedCount *int64
	Workers        []Worker
	Log            *Log
	// Violations of "exactly one finalized per unit", checked once the build
	// is complete; also listed in Details.
	Violations []Violation
	// Err is the reading error behind VerdictUnreachable and VerdictCorrupt.
	Err error
	// TestResults are the observation's, for the per-test JUnit cases.
	TestResults TestResults
	// Rounds is the build's number of rounds (1 unless a CI retry ran
	// again what did not pass); UnitRounds maps each unit a later round ran
	// to the round its result is from.
	Rounds     int
	UnitRounds map[string]int
	// partOf is Options.PartOf for this build's unit type.
	partOf func(unit string) string
}

// Judge applies the report's rules to what was observed, in a fixed order,
// so the first rule that holds gives the verdict:
//
//  1. reading failed -> unreachable or corrupt (exit 2); a finalized event
//     whose outcome is neither passed nor failed is corrupt too, since no
//     rule below could read it as anything but "not failed";
//  2. nothing after the init timeout -> missing (exit 2);
//  3. tombstone without meta -> expired (exit 3);
//  4. state init_failed -> init_failed (exit 3), the load errors as details;
//  5. a worker refused to join (a fingerprint mismatch, see Refusals) ->
//     refused (exit 2), whatever the units did: the workers computed
//     different suites, so no verdict of one of them is the build's;
//  6. waiting for completion gave up -> incomplete (exit 3), each
//     unfinalized unit with its last worker;
//  7. zero examples (Meta.Examples) and not opts.AllowEmpty -> failed (1);
//  8. fewer examples than opts.MinExamples -> failed (1);
//  9. any failed unit -> failed (1), one line per unit;
//  10. a manifest unit with no finalized event although finalized_count
//     says the build is complete -> incomplete (exit 3): never a false
//     green (a guard against a broken log);
//  11. else passed (0).
//
// Judge reads only AllowEmpty and MinExamples of opts, and the timeouts for
// the headlines (zero means the default). It is pure and
// safe for concurrent use.
func Judge(o Observation, opts Options) *Report {
	opts = opts.filled()
	r := &Report{
		BuildID: o.BuildID, Manifest: o.Manifest, FinalizedCount: o.FinalizedCount,
		Workers: o.Workers, Err: o.Err, TestResults: o.TestResults,
	}
	r.Log, r.UnitRounds, r.Rounds = roundLog(o.Events)
	if o.Presence == PresenceMeta {
		m := o.Meta
		r.Meta, r.State = &m, m.State
	}
	if o.Err == nil {
		if err := r.Log.unreadable(); err != nil {
			o.Err, r.Err = err, err
		}
	}
	r.partOf = opts.partOf(r.Meta)
	r.Verdict, r.Headline, r.Details = r.decide(o, opts)
	r.ExitCode = r.Verdict.ExitCode()
	return r
}

func (r *Report) decide(o Observation, opts Options) (Verdict, string, []string) {
	id := o.BuildID
	switch {
	case o.Err != nil && errors.Is(o.Err, ErrCorrupt):
		return VerdictCorrupt, fmt.Sprintf("build %s state unreadable: %s", id, cause(o.Err, ErrCorrupt)), nil
	case o.Err != nil:
		return VerdictUnreachable, "redis unreachable: " + cause(o.Err, ErrUnreachable), nil
	case o.Presence == PresenceNone:
		return VerdictMissing, fmt.Sprintf("build %s never initialized (no manifest or tombstone after %s)", id, seconds(opts.InitTimeout)), nil
	case o.Presence == PresenceTombstone:
		return VerdictExpired, fmt.Sprintf("build %s was previously initialized; its state is gone (expired or evicted)", id), nil
	case o.Meta.State == StateInitFailed:
		return VerdictInitFailed, fmt.Sprintf("build %s failed to initialize: %d load error(s)", id, len(o.Meta.LoadErrors)), o.Meta.LoadErrors
	case len(r.Log.Refusals()) > 0:
		head, lines := refusedHeadline(id, r.Log.Refusals())
		return VerdictRefused, head, lines
	case o.Stall != nil:
		var head string
		if o.Stall.Cause == StallInterrupted {
			head = "incomplete: interrupted; " + r.gap()
		} else if o.Stall.Cause == StallInactive {
			head = fmt.Sprintf("incomplete: workers inactive for %s (--inactive-timeout %s); %s",
				seconds(o.Stall.Idle.Round(time.Second)), seconds(opts.InactiveTimeout), r.gap())
		} else {
			head = fmt.Sprintf("incomplete: %s after %s (--wait)", r.gap(), seconds(opts.Timeout))
		}
		return VerdictIncomplete, head, r.unfinalizedLines()
	}

	// The build is complete: the log is final, and the invariant holds or
	// is reported.
	r.Violations = r.Log.Violations(o.Manifest)
	var broken []string
	for _, v := range r.Violations {
		if v.Finalized > 1 {
			broken = append(broken, fmt.Sprintf("invariant violated: %s finalized %d times", v.UnitID, v.Finalized))
		}
	}
	examples := o.Meta.Examples()
	failed := r.Log.Failed()
	unfinalized := r.Log.NeverFinalized(o.Manifest)
	switch {
	case examples == 0 && !opts.AllowEmpty:
		head := fmt.Sprintf("%d units, 0 examples selected (--allow-empty not given)", o.Meta.TotalUnits)
		return VerdictFailed, head, append(append([]string(nil), o.Meta.FileArgs...), broken...)
	case examples < opts.MinExamples:
		return VerdictFailed, fmt.Sprintf("%d examples selected, fewer than --min-examples %d", examples, opts.MinExamples), broken
	case len(failed) > 0:
		return VerdictFailed, fmt.Sprintf("%d of %d units failed", len(failed), o.Meta.TotalUnits), append(failedLines(failed, &o.Meta), broken...)
	case len(unfinalized) > 0:
		head := fmt.Sprintf("incomplete: %s, but %d unit(s) have no finalized event", r.gap(), len(unfinalized))
		return VerdictIncomplete, head, append(r.unfinalizedLines(), broken...)
	}
	return VerdictPassed, "passed", broken
}

// gap says how far the build got: "<n> of <total> units finalized".
func (r *Report) gap() string {
	n := int64(0)
	if r.FinalizedCount != nil {
		n = *r.FinalizedCount
	}
	total := int64(0)
	if r.Meta != nil {
		total = r.Meta.TotalUnits
	}
	return fmt.Sprintf("%d of %d units finalized", n, total)
}

// NeverFinalized is the manifest's units with no finalized event, with the
// worker that held each last.
func (r *Report) NeverFinalized() []UnfinalizedUnit {
	return r.log().NeverFinalized(r.Manifest)
}

// log is r.Log, or an empty log for a Report not made by Judge, so that
// every rendering works on any Report.
func (r *Report) log() *Log {
	if r.Log == nil {
		return NewLog(nil)
	}
	return r.Log
}

func (r *Report) unfinalizedLines() []string {
	var lines []string
	for _, u := range r.NeverFinalized() {
		holder := "(never delivered)"
		if u.LastWorkerID != nil {
			holder = "(last worker " + *u.LastWorkerID + ")"
		}
		lines = append(lines, "never finalized: "+u.UnitID+" "+holder)
	}
	return lines
}

// failedLines gives one line per failed unit: its reason (ReasonShown),
// its worker and the first line of its first error.
func failedLines(failed []FailedUnit, m *Meta) []string {
	lines := make([]string, 0, len(failed))
	for _, f := range failed {
		reason := "no reason"
		if f.Reason != nil {
			reason = ReasonShown(*f.Reason, m)
		}
		line := fmt.Sprintf("failed: %s (%s, worker %s)", f.UnitID, reason, f.WorkerID)
		if e, ok := f.FirstError(); ok {
			line += fmt.Sprintf(" %s: %s", e.Class, firstLine(e.Message))
		}
		lines = append(lines, line)
	}
	return lines
}

// cause is err's text without the sentinel's own words, which the headline
// already says.
func cause(err, sentinel error) string {
	return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// seconds prints d as the command's flags read: "300s", "1.5s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
