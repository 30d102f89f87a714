package report

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hopper-queue/hopper/events"
)

// A build retried by a CI retry has rounds (see docs/design.md#rounds):
// round 1 ran every unit; each later round, opened by a round_opened event
// in the shared attempt log, ran again the units that did not pass in the
// round before, with fresh budgets. The report judges the whole build, each
// unit by its latest round: the log it queries keeps, of each unit's
// events, those of the round that ran it last, so that the rules (one
// finalized per unit, failed, flaky, never finalized) hold per round.

// latestRounds maps each unit run in a round after the first to the last
// round that ran it, from the log's round_opened events; rounds is the
// build's number of rounds.
func latestRounds(evs []events.Event) (unitRound map[string]int, rounds int) {
	unitRound, rounds = map[string]int{}, 1
	for _, e := range evs {
		if e.Type != events.TypeRoundOpened {
			continue
		}
		r := e.RoundOf()
		rounds = max(rounds, r)
		for _, u := range e.UnitIDs {
			unitRound[u] = max(unitRound[u], r)
		}
	}
	return unitRound, rounds
}

// roundLog is the log the report judges: every event outside units, and of
// each unit the events of its latest round. A unit run again in a later
// round that passed there counts as flaky: it failed, then passed on a
// retry.
func roundLog(evs []events.Event) (*Log, map[string]int, int) {
	unitRound, rounds := latestRounds(evs)
	if rounds == 1 {
		return NewLog(evs), unitRound, rounds
	}
	kept := make([]events.Event, 0, len(evs))
	for _, e := range evs {
		if e.UnitScoped() && e.RoundOf() != max(unitRound[*e.UnitID], 1) {
			continue
		}
		kept = append(kept, e)
	}
	l := NewLog(kept)
	l.rerun = unitRound
	return l, unitRound, rounds
}

// roundOf is the round whose result stands for unit: 1 unless a later
// round ran it again.
func (r *Report) roundOf(unit string) int { return max(r.UnitRounds[unit], 1) }

// roundLines say, for a build of several rounds, what each later round ran.
func (r *Report) roundLines() []string {
	if r.Rounds <= 1 {
		return nil
	}
	count := map[int]int{}
	for _, round := range r.UnitRounds {
		count[round]++
	}
	lines := []string{fmt.Sprintf("rounds: %d (a CI retry runs again what did not pass; each unit is judged by its latest round)", r.Rounds)}
	for round := 2; round <= r.Rounds; round++ {
		lines = append(lines, fmt.Sprintf("round %d: %d unit(s) whose latest result is from it", round, count[round]))
	}
	return lines
}

// completeRound waits for the build's latest round, when it has rounds
// after the first: the completion, the workers and the stall are that
// round's; the finalized count is the whole build's (every earlier round
// was complete when the next one opened).
func (w waiter) completeRound(ctx context.Context, obs *Observation, baseMeta map[string]string) (bool, error) {
	round, err := strconv.Atoi(baseMeta["round"])
	if err != nil || round <= 1 {
		return false, nil
	}
	rw := w
	if rw.rd.b, err = w.rd.b.Round(round); err != nil {
		return true, err
	}
	ro := Observation{BuildID: obs.BuildID, Presence: PresenceMeta}
	if err := rw.complete(ctx, &ro); err != nil {
		return true, err
	}
	if ro.Presence != PresenceMeta {
		obs.Presence = PresenceTombstone // the round's state expired under the report
		return true, nil
	}
	obs.Workers, obs.Stall = ro.Workers, ro.Stall
	n := obs.Meta.TotalUnits - ro.Meta.TotalUnits + *ro.FinalizedCount
	obs.FinalizedCount = &n
	return true, nil
}
