// Package live follows a build while it runs, for the progress line of
// hopper run and hopper work and for hopper status: it reads meta, the
// workers hash and the attempt log's new entries, and sums them up as a
// Snapshot. It only reads (no TTL is touched), like the report.
package live

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/timings"
	"github.com/redis/rueidis"
)

// ErrNoBuild: neither the build's meta nor its tombstone exists.
var ErrNoBuild = errors.New("no such build")

// Snapshot is a build at one moment.
type Snapshot struct {
	BuildID string
	// Round is the build's latest retry round (1: the build as published),
	// whose figures the snapshot holds: State to Workers are that round's.
	Round int
	// Published is true once meta exists; Gone when only the tombstone
	// does (the build's state expired).
	Published, Gone bool
	State           string
	Total           int64
	Finalized       int64
	// Passed and Failed count units by their final outcome; Flaky those
	// that passed after a retry.
	Passed, Failed, Flaky int
	// Retrying are the units requeued and not yet finalized, with their
	// retry index.
	Retrying []UnitRetry
	// FailedUnits are the failed units with their reason, in the order
	// they were finalized.
	FailedUnits []UnitFailure
	Reclaims    int
	Abandoned   int
	Workers     []Worker
	// Now is the server's time; Elapsed runs from the build's ready_at to
	// Now, or, once the build is complete, to its last finalization: a
	// finished build's status, read later, says how long it took.
	Now     time.Time
	Elapsed time.Duration
	// Timeout is the publisher's reclaim timeout (meta), by which a worker
	// counts as active.
	Timeout time.Duration
	// Running are the units live workers hold, with how long each has run;
	// Pending the manifest's units neither finalized nor running (nil when
	// meta does not list the units: then only their number is known).
	Running []RunningUnit
	Pending []string
	// Expected is what earlier builds measured of the suite's units (the
	// Tracker's), Measured what this build's finalized attempts took: the
	// ETA's knowledge (see eta.go).
	Expected, Measured timings.Table
}

// RunningUnit is a unit a live worker holds.
type RunningUnit struct {
	UnitID, WorkerID string
	// For is how long it has run: since its latest delivery or reclaim.
	For time.Duration
}

// UnitRetry is a unit waiting for, or running, another attempt.
type UnitRetry struct {
	UnitID     string
	RetryIndex int64
}

// UnitFailure is a unit finalized failed.
type UnitFailure struct {
	UnitID, Reason, WorkerID string
}

// Worker is one worker's record.
type Worker struct {
	ID          string
	LastSeen    time.Duration // before Snapshot.Now
	CurrentUnit string
	Processed   int64
	// Active: it holds a unit and was seen within the timeout.
	Active bool
	// Aborted: it abandoned the unit it still names (it ran past its max
	// unit duration) and is gone; it is no slot, though recently seen.
	Aborted bool
}

// Complete reports whether every unit has its final state.
func (s Snapshot) Complete() bool {
	return s.Published && s.State == report.StateReady && s.Finalized >= s.Total
}

// ActiveWorkers counts the active workers: those holding a unit and seen
// within the timeout (Worker.Active), so that one that died holding a unit
// is not counted busy, nor one that aborted it.
func (s Snapshot) ActiveWorkers() int {
	n := 0
	for _, w := range s.Workers {
		if w.Active && !w.Aborted {
			n++
		}
	}
	return n
}

// Slots counts the live workers: seen within the timeout and not aborted,
// busy or idle.
func (s Snapshot) Slots() int {
	n := 0
	for _, w := range s.Workers {
		if w.LastSeen < s.Timeout && !w.Aborted {
			n++
		}
	}
	return n
}

// unit is what the log has said about one unit so far.
type unit struct {
	requeues   int64
	retryIndex int64
	finalized  bool
	outcome    string
}

// Tracker follows one build. Each Poll reads only the log entries written
// since the last. Not safe for concurrent use.
type Tracker struct {
	// Expected is what earlier builds measured of the suite's units, for
	// the ETA; nil: this build's own measures alone.
	Expected timings.Table

	build   *queue.Build
	openErr error // the build id queue.Open refused, returned by Poll
	buildID string
	lastID  string // of the last log entry read; "": none yet
	// rounds sums the log per retry round (see docs/design.md#rounds):
	// a snapshot shows the latest round's alone, and one that opens while
	// the build is followed starts from its own first event.
	rounds map[int]*tally
}

// tally is what the log has said about one round's units so far.
type tally struct {
	units   map[string]*unit
	order   []string
	failed  []UnitFailure
	reclaim int
	abandon int
	// lastFinalMS is the server time of the latest finalization read.
	lastFinalMS int64
	// startedMS is when each unit was last delivered or reclaimed;
	// measured what its finalized attempt took; abandoned the unit each
	// worker abandoned last.
	startedMS map[string]int64
	measured  timings.Table
	abandoned map[string]string
}

// NewTracker follows build buildID through client, which the caller owns.
// A build id queue refuses is Poll's error.
func NewTracker(client rueidis.Client, buildID string) *Tracker {
	b, err := queue.Open(client, buildID, queue.Options{})
	return &Tracker{build: b, openErr: err, buildID: buildID, rounds: map[int]*tally{}}
}

// round returns the tally of round n, new when nothing of it was read.
func (t *Tracker) round(n int) *tally {
	r, ok := t.rounds[n]
	if !ok {
		r = &tally{units: map[string]*unit{}, startedMS: map[string]int64{}, measured: timings.Table{}, abandoned: map[string]string{}}
		t.rounds[n] = r
	}
	return r
}

// Poll reads the build once. ErrNoBuild: the build was never published (or
// is not yet). A Redis error is returned as it is.
func (t *Tracker) Poll(ctx context.Context) (Snapshot, error) {
	s := Snapshot{BuildID: t.buildID}
	if t.openErr != nil {
		return s, t.openErr
	}
	look, err := t.build.ReadLook(ctx)
	if err != nil {
		return s, err
	}
	now := time.UnixMilli(look.NowMS)
	s.Now = now
	if len(look.Meta) == 0 {
		if look.Tombstone {
			s.Gone = true
			return s, nil
		}
		return s, fmt.Errorf("%w: build %s", ErrNoBuild, t.buildID)
	}
	s.Round = look.Round
	fields, workers := look.Meta, look.Workers
	meta, err := report.ParseMeta(fields)
	if err != nil {
		return s, err
	}
	s.Published, s.State, s.Total, s.Finalized = true, meta.State, meta.TotalUnits, meta.FinalizedCount
	s.Timeout = queue.DefaultTimeout
	if v, err := strconv.ParseFloat(fields["timeout"], 64); err == nil && v > 0 {
		s.Timeout = time.Duration(v * float64(time.Second))
	}
	if err := t.readLog(ctx); err != nil {
		return s, err
	}
	r := t.round(s.Round)
	if meta.ReadyAtMS > 0 {
		end := now
		if s.Complete() {
			// The log is read after meta, so it holds every finalization
			// meta counts.
			end = time.UnixMilli(max(meta.ReadyAtMS, r.lastFinalMS))
		}
		s.Elapsed = end.Sub(time.UnixMilli(meta.ReadyAtMS))
	}
	r.sum(&s)
	for i := range s.FailedUnits {
		s.FailedUnits[i].Reason = report.ReasonShown(s.FailedUnits[i].Reason, &meta)
	}
	r.addWorkers(&s, report.ParseWorkers(workers))
	s.Expected, s.Measured = t.Expected, maps.Clone(r.measured)
	r.place(&s, meta.UnitIDs)
	return s, nil
}

// addWorkers gives s the workers' records as of s.Now: active when holding
// a unit and seen within the timeout, aborted when the unit they hold is
// the one the log says they abandoned.
func (t *tally) addWorkers(s *Snapshot, ws []report.Worker) {
	for _, w := range ws {
		v := Worker{ID: w.ID, Processed: int64(w.Processed), LastSeen: s.Now.Sub(time.UnixMilli(w.LastSeenMS))}
		if w.CurrentUnit != nil {
			v.CurrentUnit = *w.CurrentUnit
		}
		v.Active = v.CurrentUnit != "" && v.LastSeen < s.Timeout
		v.Aborted = v.CurrentUnit != "" && t.abandoned[v.ID] == v.CurrentUnit
		s.Workers = append(s.Workers, v)
	}
}

// place sorts the units not finalized into those live workers run and
// those still waiting.
func (t *tally) place(s *Snapshot, manifest []string) {
	running := map[string]bool{}
	for _, w := range s.Workers {
		if w.Active && !w.Aborted && !running[w.CurrentUnit] {
			running[w.CurrentUnit] = true
			run := RunningUnit{UnitID: w.CurrentUnit, WorkerID: w.ID}
			if ms, ok := t.startedMS[w.CurrentUnit]; ok {
				run.For = s.Now.Sub(time.UnixMilli(ms))
			}
			s.Running = append(s.Running, run)
		}
	}
	for _, u := range manifest {
		if x, ok := t.units[u]; (!ok || !x.finalized) && !running[u] {
			s.Pending = append(s.Pending, u)
		}
	}
}

// readLog reads the attempt log's entries after the last one read.
func (t *Tracker) readLog(ctx context.Context) error {
	return t.build.ReadAttemptsAfter(ctx, t.lastID, func(id, raw string, _ bool) error {
		t.lastID = id
		ev, err := events.Decode([]byte(raw))
		if err != nil {
			return nil // the report says what is wrong with the log
		}
		if ev.UnitScoped() {
			t.round(ev.RoundOf()).apply(ev)
		}
		return nil
	})
}

func (t *tally) apply(ev events.Event) {
	id := *ev.UnitID
	u, ok := t.units[id]
	if !ok {
		u = &unit{}
		t.units[id] = u
		t.order = append(t.order, id)
	}
	switch ev.Type {
	case events.TypeDelivered:
		t.startedMS[id] = ev.AtMS
	case events.TypeRequeued:
		u.requeues++
		u.retryIndex = ev.RetryIndex
	case events.TypeReclaimed:
		t.reclaim++
		t.startedMS[id] = ev.AtMS
	case events.TypeAbandoned:
		t.abandon++
		t.abandoned[ev.WorkerID] = id
	case events.TypeFinalized:
		u.finalized, u.outcome = true, ev.Outcome
		t.measured[id] = time.Duration(ev.DurationMS * float64(time.Millisecond))
		t.lastFinalMS = max(t.lastFinalMS, ev.AtMS)
		if ev.Outcome == events.OutcomeFailed {
			reason := ""
			if ev.Reason != nil {
				reason = *ev.Reason
			}
			t.failed = append(t.failed, UnitFailure{UnitID: id, Reason: reason, WorkerID: ev.WorkerID})
		}
	}
}

func (t *tally) sum(s *Snapshot) {
	for _, id := range t.order {
		u := t.units[id]
		switch {
		case u.finalized && u.outcome == events.OutcomePassed:
			s.Passed++
			if u.requeues > 0 {
				s.Flaky++
			}
		case u.finalized:
			s.Failed++
		case u.requeues > 0:
			s.Retrying = append(s.Retrying, UnitRetry{UnitID: id, RetryIndex: u.retryIndex})
		}
	}
	s.FailedUnits = slices.Clone(t.failed)
	s.Reclaims, s.Abandoned = t.reclaim, t.abandon
}
