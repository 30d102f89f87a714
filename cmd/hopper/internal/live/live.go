// Package live follows a build while it runs, for the progress line of
// hopper run and hopper work and for hopper status: it reads meta, the
// workers hash and the attempt log's new entries, and sums them up as a
// Snapshot. It only reads (no TTL is touched), like the report.
package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
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
}

// Complete reports whether every unit has its final state.
func (s Snapshot) Complete() bool {
	return s.Published && s.State == report.StateReady && s.Finalized >= s.Total
}

// ActiveWorkers counts the active workers: those holding a unit and seen
// within the timeout (Worker.Active), so that one that died holding a unit
// is not counted busy.
func (s Snapshot) ActiveWorkers() int {
	n := 0
	for _, w := range s.Workers {
		if w.Active {
			n++
		}
	}
	return n
}

// ETA estimates the time left from the pace so far; ok is false before the
// first unit is finalized.
func (s Snapshot) ETA() (time.Duration, bool) {
	if s.Finalized <= 0 || s.Elapsed <= 0 || s.Total <= s.Finalized {
		return 0, s.Total > 0 && s.Finalized >= s.Total
	}
	per := s.Elapsed / time.Duration(s.Finalized)
	return per * time.Duration(s.Total-s.Finalized), true
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
		r = &tally{units: map[string]*unit{}}
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
	for _, w := range report.ParseWorkers(workers) {
		v := Worker{ID: w.ID, Processed: int64(w.Processed), LastSeen: now.Sub(time.UnixMilli(w.LastSeenMS))}
		if w.CurrentUnit != nil {
			v.CurrentUnit = *w.CurrentUnit
		}
		v.Active = v.CurrentUnit != "" && v.LastSeen < s.Timeout
		s.Workers = append(s.Workers, v)
	}
	return s, nil
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
	case events.TypeRequeued:
		u.requeues++
		u.retryIndex = ev.RetryIndex
	case events.TypeReclaimed:
		t.reclaim++
	case events.TypeAbandoned:
		t.abandon++
	case events.TypeFinalized:
		u.finalized, u.outcome = true, ev.Outcome
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
