package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/hopper-queue/hopper/events"
)

// Log is a build's attempt log read back, with the report's queries. The
// log is the only record of what happened to each unit, so every
// answer the report gives about units comes from here.
//
// Only unit-scoped events (events.Event.UnitScoped) belong to a unit;
// worker_error events are kept apart, and events of types this version does
// not know are ignored, so newer writers cannot break an older report.
// Units are listed in the order they first appear in the log.
//
// A Log is immutable once built and safe for concurrent use.
type Log struct {
	events []events.Event
	units  []string                  // first-appearance order
	byUnit map[string][]events.Event // unit-scoped events, in log order
	// rerun maps the units a later round ran again to that round (see
	// rounds.go); nil for a build of one round.
	rerun map[string]int
}

// NewLog indexes evs, the attempt log in stream order. The slice is kept,
// not copied: the caller must not modify it afterwards.
func NewLog(evs []events.Event) *Log {
	l := &Log{events: evs, byUnit: make(map[string][]events.Event)}
	for _, e := range evs {
		if !e.UnitScoped() {
			continue
		}
		u := *e.UnitID
		if _, seen := l.byUnit[u]; !seen {
			l.units = append(l.units, u)
		}
		l.byUnit[u] = append(l.byUnit[u], e)
	}
	return l
}

// Events returns the whole log in order, every type included.
func (l *Log) Events() []events.Event { return l.events }

// Units returns the ids of the units the log mentions, in order of first
// appearance.
func (l *Log) Units() []string { return l.units }

// FailedUnit is a unit whose last finalized event is failed: the "failed"
// entries of the JSON summary.
type FailedUnit struct {
	UnitID string `json:"unit_id"`
	// Reason is why it was finalized failed (events.Reason*); nil only if a
	// writer broke the rule that a failed outcome always has one.
	Reason   *string `json:"reason"`
	WorkerID string  `json:"worker_id"`
	// Errors is the event's errors payload as written, or [] when it had
	// none.
	Errors json.RawMessage `json:"errors"`
}

// FirstError returns the first entry of the errors payload that carries a
// message, for one-line summaries. ok is false when there is none (no
// payload, a payload that is not an array, only a truncation marker).
func (f FailedUnit) FirstError() (first events.ErrorEntry, ok bool) {
	for _, e := range errorEntries(f.Errors) {
		if e.Message != "" {
			return e, true
		}
	}
	return first, false
}

// Failed returns the units whose last finalized event has outcome failed, in
// first-appearance order. It is the last finalized that counts, so a unit
// finalized twice (an invariant violation, see Violations) is judged by its
// final word.
func (l *Log) Failed() []FailedUnit {
	out := []FailedUnit{}
	for _, u := range l.units {
		last, ok := l.lastFinalized(u)
		if !ok || last.Outcome != events.OutcomeFailed {
			continue
		}
		errs := last.Errors
		if len(errs) == 0 {
			errs = json.RawMessage("[]")
		}
		out = append(out, FailedUnit{UnitID: u, Reason: last.Reason, WorkerID: last.WorkerID, Errors: errs})
	}
	return out
}

// Flaky returns the units that were requeued at least once, or run again
// in a later round, and whose last finalized event passed: they failed,
// then passed on a retry. A reclaim
// alone never makes a unit flaky: a reclaimed unit was lost with its worker,
// it did not fail.
func (l *Log) Flaky() []string {
	out := []string{}
	for _, u := range l.units {
		last, ok := l.lastFinalized(u)
		if ok && last.Outcome == events.OutcomePassed && (l.count(u, events.TypeRequeued) > 0 || l.rerun[u] > 1) {
			out = append(out, u)
		}
	}
	return out
}

// UnfinalizedUnit is a manifest unit with no finalized event: the
// "never_finalized" entries of the JSON summary.
type UnfinalizedUnit struct {
	UnitID string `json:"unit_id"`
	// LastWorkerID is the worker of the unit's latest delivered or reclaimed
	// event: who held it last. Nil when it was never delivered.
	LastWorkerID *string `json:"last_worker_id"`
}

// NeverFinalized returns, in manifest order, the units of manifest that have
// no finalized event, each with the worker that held it last.
func (l *Log) NeverFinalized(manifest []string) []UnfinalizedUnit {
	out := []UnfinalizedUnit{}
	for _, u := range manifest {
		if l.count(u, events.TypeFinalized) > 0 {
			continue
		}
		entry := UnfinalizedUnit{UnitID: u}
		evs := l.byUnit[u]
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Type == events.TypeDelivered || evs[i].Type == events.TypeReclaimed {
				w := evs[i].WorkerID
				entry.LastWorkerID = &w
				break
			}
		}
		out = append(out, entry)
	}
	return out
}

// Abandoned returns the units with an abandoned event: some attempt ran past
// the worker's max unit duration, whatever became of the unit afterwards.
func (l *Log) Abandoned() []string {
	out := []string{}
	for _, u := range l.units {
		if l.count(u, events.TypeAbandoned) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// RetryCounts maps each requeued unit to the highest retry_index among its
// requeued events: how many retries it used. Units never requeued are left
// out.
func (l *Log) RetryCounts() UnitCounts {
	out := UnitCounts{}
	for _, u := range l.units {
		best, found := int64(0), false
		for _, e := range l.byUnit[u] {
			if e.Type == events.TypeRequeued && (!found || e.RetryIndex > best) {
				best, found = e.RetryIndex, true
			}
		}
		if found {
			out = append(out, UnitCount{UnitID: u, Count: best})
		}
	}
	return out
}

// ReclaimCounts maps each reclaimed unit to its number of reclaimed events.
// Units never reclaimed are left out.
func (l *Log) ReclaimCounts() UnitCounts {
	out := UnitCounts{}
	for _, u := range l.units {
		if n := l.count(u, events.TypeReclaimed); n > 0 {
			out = append(out, UnitCount{UnitID: u, Count: int64(n)})
		}
	}
	return out
}

// WorkerErrors returns the worker_error events, in log order.
func (l *Log) WorkerErrors() []events.Event { return l.ofType(events.TypeWorkerError) }

// StaleRejections returns the stale_rejected events, in log order: attempts
// whose result was refused because the unit had changed hands.
func (l *Log) StaleRejections() []events.Event { return l.ofType(events.TypeStaleRejected) }

// Violation is a unit that breaks the invariant "exactly one finalized event
// per unit".
type Violation struct {
	UnitID string
	// Finalized is how many finalized events the unit has: 0 for a manifest
	// unit never finalized, 2 or more for a unit finalized again.
	Finalized int
}

// Violations checks the invariant "exactly one finalized event per unit"
// against manifest: every manifest unit with no finalized event (in manifest
// order), then every unit of the log finalized more than once (in
// first-appearance order). On a build still running, units not yet finalized
// are expected; the check means something once the build is complete.
func (l *Log) Violations(manifest []string) []Violation {
	var out []Violation
	listed := make(map[string]bool, len(manifest))
	for _, u := range manifest {
		listed[u] = true
		if n := l.count(u, events.TypeFinalized); n != 1 {
			out = append(out, Violation{UnitID: u, Finalized: n})
		}
	}
	for _, u := range l.units {
		if n := l.count(u, events.TypeFinalized); n > 1 && !listed[u] {
			out = append(out, Violation{UnitID: u, Finalized: n})
		}
	}
	return out
}

// unreadable returns an ErrCorrupt error naming the first finalized event
// whose outcome is neither passed nor failed, nil when there is none. The
// events package decodes any outcome, but the queries read one that is not
// "failed" as not failed: judged, such an event would count as a pass.
func (l *Log) unreadable() error {
	for _, e := range l.events {
		if e.UnitScoped() && e.Type == events.TypeFinalized && e.Outcome != events.OutcomePassed && e.Outcome != events.OutcomeFailed {
			return fmt.Errorf("%w: unit %s: finalized event of worker %s has outcome %q, neither %q nor %q",
				ErrCorrupt, *e.UnitID, e.WorkerID, e.Outcome, events.OutcomePassed, events.OutcomeFailed)
		}
	}
	return nil
}

// lastDuration returns the duration_ms of the unit's last attempt that
// recorded one (finalized or requeued), for the JUnit test case time.
func (l *Log) lastDuration(unit string) (ms float64, ok bool) {
	evs := l.byUnit[unit]
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == events.TypeFinalized || evs[i].Type == events.TypeRequeued {
			return evs[i].DurationMS, true
		}
	}
	return 0, false
}

func (l *Log) lastFinalized(unit string) (events.Event, bool) {
	evs := l.byUnit[unit]
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == events.TypeFinalized {
			return evs[i], true
		}
	}
	return events.Event{}, false
}

func (l *Log) count(unit, typ string) int {
	n := 0
	for _, e := range l.byUnit[unit] {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func (l *Log) ofType(typ string) []events.Event {
	out := []events.Event{}
	for _, e := range l.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// UnitCount is one unit's count in a UnitCounts.
type UnitCount struct {
	UnitID string
	Count  int64
}

// UnitCounts is a map from unit id to a count that keeps the log's
// first-appearance order, so the JSON summary is the same bytes for the same
// log. It encodes as a JSON object.
type UnitCounts []UnitCount

// Get returns the count of unit, and whether it is listed.
func (c UnitCounts) Get(unit string) (int64, bool) {
	for _, uc := range c {
		if uc.UnitID == unit {
			return uc.Count, true
		}
	}
	return 0, false
}

// MarshalJSON encodes c as a JSON object in c's order, without HTML escaping.
func (c UnitCounts) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, uc := range c {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(uc.UnitID)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(uc.Count, 10))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalNoEscape encodes v compactly without HTML escaping: unit ids and
// messages read in the summary as they were written.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// errorEntries decodes an errors payload leniently: an entry of the wrong
// shape is skipped, and a payload that is not an array gives nothing, since
// a failure's details must never hide the failure itself.
func errorEntries(raw json.RawMessage) []events.ErrorEntry {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []events.ErrorEntry
	for _, it := range items {
		var e events.ErrorEntry
		if json.Unmarshal(it, &e) == nil {
			out = append(out, e)
		}
	}
	return out
}
