package report_test

import (
	"testing"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
)

// failedBuild is a complete build of four units that shows every kind of
// line: a pass, a flaky unit, a failure, an abandoned unit reclaimed and
// passed, a worker error and a stale rejection.
func failedBuild(t testing.TB) *report.Report {
	t.Helper()
	log := newLog(t).
		delivered("./a", "w1").passed("./a", "w1", 1200).
		delivered("./b", "w2").requeued("./b", "w2", 1).delivered("./b", "w1").passed("./b", "w1", 800).
		delivered("./c", "w1").failed("./c", "w1", 2500, boom("AssertionError", "want 1\ngot 2"), boom("Second", "s")).
		delivered("./d", "w2").abandoned("./d", "w2").reclaimed("./d", "w1", "w2").
		stale("./d", "w2", events.OperationFinalize).
		workerError("w2", events.PhaseExecution, "*os.PathError", "open x: no such file\nmore").
		passed("./d", "w1", 50).
		events()
	units := []string{"./a", "./b", "./c", "./d"}
	n := int64(4)
	return report.Judge(report.Observation{
		BuildID:  "b1",
		Presence: report.PresenceMeta,
		Meta: report.Meta{
			State: report.StateReady, ReadyAtMS: 1_733_143_440_000, TotalUnits: 4, FinalizedCount: 4, UnitType: "package",
			UnitIDs: units, FileArgs: []string{"./..."}, Seed: "1234", Fingerprint: "f00d", Revision: "abc123",
		},
		Manifest:       units,
		FinalizedCount: &n,
		Workers: report.ParseWorkers(map[string]string{
			"w2": `{"last_seen":1733143440100,"current_unit":null,"processed":2}`,
			"w1": `{"last_seen":1733143440200,"current_unit":null,"processed":4}`,
		}),
		Events: log,
	}, report.Options{})
}
