package queue

import (
	"slices"
	"testing"

	"github.com/hopper-queue/hopper/events"
)

// A round runs again the units whose last finalized event of the round
// before is not passed, and those with none (never finalized), in manifest
// order; other rounds' events do not count.
func TestRoundUnits(t *testing.T) {
	fin := func(unit, outcome string, round int64) events.Event {
		return events.Event{Type: events.TypeFinalized, UnitID: &unit, Outcome: outcome, Round: round}
	}
	log := []events.Event{
		fin("a", events.OutcomePassed, 0),
		fin("b", events.OutcomeFailed, 0),
		fin("c", events.OutcomeFailed, 0),
		fin("c", events.OutcomePassed, 0), // its last word
		fin("d", events.OutcomeFailed, 2), // another round's
		fin("e", events.OutcomePassed, 2),
	}
	manifest := []string{"a", "b", "c", "d", "never"}
	if got, want := RoundUnits(manifest, log, 1), []string{"b", "d", "never"}; !slices.Equal(got, want) {
		t.Errorf("round 1: got %v, want %v", got, want)
	}
	if got, want := RoundUnits([]string{"d", "e"}, log, 2), []string{"d"}; !slices.Equal(got, want) {
		t.Errorf("round 2: got %v, want %v", got, want)
	}
}

func TestRoundKeys(t *testing.T) {
	if RoundKeys("b", 1) != BuildKeys("b") {
		t.Error("round 1's keys are the build's")
	}
	k := RoundKeys("b", 3)
	if k.Units != "hopper:{b}:round:3:units" || k.Attempts != "hopper:{b}:attempts" || k.Round() != 3 || k.testResultsKey() != "hopper:{b}:round:3:tests" {
		t.Errorf("round 3 keys: %+v", k)
	}
}
