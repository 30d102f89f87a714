package report

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/testresults"
)

// TestResults are the per-test results of a build's settled attempts, by
// round and attempt, as the queue keeps them beside the attempt log.
type TestResults map[int]map[queue.AttemptRef]json.RawMessage

// testResults reads those of every round; an unreadable hash is the
// report's reading error like any other key's.
func (w waiter) testResults(ctx context.Context, baseMeta map[string]string) (TestResults, error) {
	rounds, err := strconv.Atoi(baseMeta["round"])
	if err != nil || rounds < 1 {
		rounds = 1
	}
	out := TestResults{}
	for round := 1; round <= rounds; round++ {
		b, err := w.rd.b.Round(round)
		if err != nil {
			return nil, err
		}
		if out[round], err = b.TestResults(ctx); err != nil {
			return nil, readError(err)
		}
	}
	return out, nil
}

// unitTests is what one unit's attempts say of its tests: the final
// attempt's cases (nil: it gave no per-test results), and the cases of the
// attempts before it, oldest first.
type unitTests struct {
	final   []testresults.Case
	omitted int
	earlier [][]testresults.Case
}

// testsOf finds the unit's settled attempts in the log (requeued and
// finalized events, each naming its attempt) and their results.
func (r *Report) testsOf(unit string) unitTests {
	var ut unitTests
	if len(r.TestResults) == 0 {
		return ut
	}
	settled := r.log().settlements(unit)
	for i, ev := range settled {
		raw, ok := r.TestResults[ev.RoundOf()][queue.AttemptRef{UnitID: unit, Stream: ev.Stream, EntryID: ev.EntryID, WorkerID: ev.WorkerID}]
		if !ok {
			continue
		}
		cases, omitted, err := testresults.Decode(raw)
		if err != nil {
			continue // a payload not of hopper's: the unit's own result stands
		}
		if i == len(settled)-1 && ev.Type == events.TypeFinalized {
			ut.final, ut.omitted = cases, omitted
		} else {
			ut.earlier = append(ut.earlier, cases)
		}
	}
	return ut
}

// settlements are the unit's requeued and finalized events, in log order.
func (l *Log) settlements(unit string) []events.Event {
	var out []events.Event
	for _, e := range l.byUnit[unit] {
		if e.Type == events.TypeRequeued || e.Type == events.TypeFinalized {
			out = append(out, e)
		}
	}
	return out
}

// earlierFailures are the failed cases of name in the attempts before the
// final one, oldest first.
func (ut unitTests) earlierFailures(name string) []testresults.Case {
	var out []testresults.Case
	for _, cases := range ut.earlier {
		for _, c := range cases {
			if c.Name == name && c.Failed() {
				out = append(out, c)
			}
		}
	}
	return out
}

// FailedTests maps each unit whose final attempt reported failed tests to
// their names, for the JSON summary; a part's go under its whole (see
// Options.PartOf).
func (r *Report) FailedTests() map[string][]string {
	out := map[string][]string{}
	for _, u := range r.junitUnits() {
		if names := testresults.FailedNames(r.testsOf(u).final); len(names) > 0 {
			out[r.whole(u)] = append(out[r.whole(u)], names...)
		}
	}
	return out
}

// FlakyTests maps each unit (a part's whole) to its tests that failed in
// an earlier attempt and passed in the final one.
func (r *Report) FlakyTests() map[string][]string {
	out := map[string][]string{}
	for _, u := range r.junitUnits() {
		ut := r.testsOf(u)
		for _, c := range ut.final {
			if c.Status == testresults.Passed && len(ut.earlierFailures(c.Name)) > 0 {
				out[r.whole(u)] = append(out[r.whole(u)], c.Name)
			}
		}
	}
	return out
}

// wallMS is the build's wall time: from its publication (else its first
// event) to its last finalized unit, by the server's clock.
func (r *Report) wallMS() float64 {
	var first, last int64
	if r.Meta != nil {
		first = r.Meta.ReadyAtMS
	}
	for _, e := range r.log().Events() {
		if first == 0 || (e.AtMS > 0 && e.AtMS < first) {
			first = e.AtMS
		}
		if e.Type == events.TypeFinalized {
			last = max(last, e.AtMS)
		}
	}
	return float64(max(last-first, 0))
}

// TestCount is how many tests the units' final attempts reported, and how
// many of them failed; known is false when no unit gave per-test results,
// and the count of tests is then unknown (units are not tests).
func (r *Report) TestCount() (total, failed int, known bool) {
	for _, u := range r.junitUnits() {
		ut := r.testsOf(u)
		if ut.final == nil {
			continue
		}
		known = true
		total += len(ut.final) + ut.omitted
		failed += len(testresults.FailedNames(ut.final))
	}
	return total, failed, known
}
