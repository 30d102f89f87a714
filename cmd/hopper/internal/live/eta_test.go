package live

import (
	"fmt"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/timings"
	"github.com/stretchr/testify/assert"
)

// etaBuild is a build of 63 units, 62 finalized in half a second each,
// the last, "./slow", delivered to w3 at t0; three workers live. The
// clock is the snapshot's Now, the server's time: the test moves it.
func etaBuild(t *testing.T, now time.Time, expected timings.Table) Snapshot {
	t.Helper()
	t0 := time.UnixMilli(1_000_000)
	tr := &Tracker{rounds: map[int]*tally{}}
	r := tr.round(1)
	var manifest []string
	for i := range 62 {
		u := fmt.Sprintf("./p%02d", i)
		manifest = append(manifest, u)
		r.apply(unitEvent(events.TypeDelivered, u, "w1", t0.UnixMilli()-1000, 0))
		r.apply(unitEvent(events.TypeFinalized, u, "w1", t0.UnixMilli()-500, 500))
	}
	manifest = append(manifest, "./slow")
	r.apply(unitEvent(events.TypeDelivered, "./slow", "w3", t0.UnixMilli(), 0))
	s := Snapshot{Published: true, State: report.StateReady, Total: 63, Finalized: 62, Now: now, Timeout: time.Minute, Expected: expected}
	slow := "./slow"
	r.addWorkers(&s, []report.Worker{
		{ID: "w1", LastSeenMS: now.UnixMilli()}, {ID: "w2", LastSeenMS: now.UnixMilli()},
		{ID: "w3", LastSeenMS: now.UnixMilli(), CurrentUnit: &slow},
	})
	s.Measured = r.measured
	r.place(&s, manifest)
	return s
}

func unitEvent(typ, unit, worker string, atMS int64, durationMS float64) events.Event {
	return events.Event{Type: typ, UnitID: &unit, WorkerID: worker, AtMS: atMS, DurationMS: durationMS, Outcome: events.OutcomePassed}
}

// TestETAFromExpectedDurations: with one unit left that earlier builds
// timed at 28 s, the ETA is what it has left, not the pace of the 62 quick
// ones (issue 43: "62 of 63 ... ETA 0.6s" before a 28 s wait), and it
// shrinks as the clock moves.
func TestETAFromExpectedDurations(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	expected := timings.Table{"./slow": 28 * time.Second}
	for _, tc := range []struct {
		after time.Duration
		want  time.Duration
	}{{0, 28 * time.Second}, {10 * time.Second, 18 * time.Second}, {40 * time.Second, 0}} {
		s := etaBuild(t, t0.Add(tc.after), expected)
		eta, ok := s.ETA()
		assert.True(t, ok)
		assert.Equal(t, tc.want, eta, "after %s", tc.after)
	}
}

// TestETAOverLiveSlots: the work left is shared by the live slots, and
// never ends before the longest running unit's remainder.
func TestETAOverLiveSlots(t *testing.T) {
	s := Snapshot{Published: true, State: report.StateReady, Total: 5, Finalized: 0, Timeout: time.Minute,
		Expected: timings.Table{"a": 10 * time.Second, "b": 10 * time.Second, "c": 10 * time.Second, "d": 10 * time.Second},
		Workers:  []Worker{{ID: "w1"}, {ID: "w2"}},
		Running:  []RunningUnit{{UnitID: "a", WorkerID: "w1", For: 4 * time.Second}},
		Pending:  []string{"b", "c", "d", "e"}} // e unknown: the mean, 10 s
	eta, ok := s.ETA()
	assert.True(t, ok)
	assert.Equal(t, (6+40)*time.Second/2, eta)

	s.Running[0].For = 0
	s.Pending = nil
	s.Expected["a"] = time.Minute
	s.Total = 1
	eta, _ = s.ETA()
	assert.Equal(t, time.Minute, eta, "one unit of a minute on two slots still takes a minute")
}

// TestETAUnknownAndAbortedSlots: no ETA while nothing is known, and a
// worker that abandoned the unit it still names is no slot (issue 43: an
// aborted slot was counted as a busy worker).
func TestETAUnknownAndAbortedSlots(t *testing.T) {
	s := Snapshot{Published: true, State: report.StateReady, Total: 3, Timeout: time.Minute,
		Workers: []Worker{{ID: "w1"}}, Pending: []string{"a", "b", "c"}}
	_, ok := s.ETA()
	assert.False(t, ok, "nothing known")

	now := time.UnixMilli(2_000_000)
	r := (&Tracker{rounds: map[int]*tally{}}).round(1)
	r.apply(unitEvent(events.TypeDelivered, "hang", "w1.2", now.UnixMilli()-90_000, 0))
	r.apply(unitEvent(events.TypeAbandoned, "hang", "w1.2", now.UnixMilli()-1_000, 0))
	hang := "hang"
	s = Snapshot{Now: now, Timeout: time.Minute}
	r.addWorkers(&s, []report.Worker{
		{ID: "w1.1", LastSeenMS: now.UnixMilli()},
		{ID: "w1.2", LastSeenMS: now.UnixMilli() - 500, CurrentUnit: &hang},
		{ID: "w1.2.r2", LastSeenMS: now.UnixMilli()},
	})
	assert.Equal(t, 2, s.Slots())
	assert.Equal(t, 0, s.ActiveWorkers())
	r.place(&s, []string{"hang"})
	assert.Empty(t, s.Running, "the aborted worker runs nothing")
	assert.Equal(t, []string{"hang"}, s.Pending)
}
