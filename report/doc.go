// Package report gives a build its one authoritative verdict, from the build's
// meta and its attempt log alone.
//
// Workers exit 0 whatever their units did; whether a build passed is decided
// here, by a process that never ran a unit and never writes to Redis. The
// report waits for the build to appear, then for every unit to be finalized,
// reads the whole attempt log and applies the verdict rules in a fixed order,
// so that nothing short of a published manifest with every unit finalized
// passed can read as green.
//
// The package has two halves, kept apart:
//   - pure: Log (the attempt-log queries over []events.Event),
//     ParseMeta, Judge (the verdict rules), and the
//     renderings of a Report (console text, JSON summary, failed-units list,
//     JUnit XML, and a self-contained HTML page with a timeline: WriteHTML).
//     Plain values in, decisions and bytes out.
//   - reading: Run, which polls the build's keys through a rueidis.Client the
//     caller owns (and closes), then hands what it saw to Judge. It only reads:
//     no TTL is touched and nothing is written.
//
// hopper's units are any strings a command understands, not necessarily
// test examples. "Examples" therefore means meta's
// total_examples when the publisher wrote it, and otherwise the number of
// units (see Meta.Examples); the empty-build and min-examples rules apply to
// that number.
//
// A typical caller (a `report` command):
//
//	r, err := report.Run(ctx, client, buildID, report.Options{})
//	if err != nil { // invalid options, or ctx ended
//		log.Print(err)
//		os.Exit(report.ExitInfrastructure)
//	}
//	_ = r.WriteConsole(os.Stdout)
//	_ = r.WriteSummary("tmp/hopper/summary.json")
//	_ = r.WriteJUnit("tmp/hopper/junit.xml")
//	_ = r.WriteHTML("tmp/hopper/report.html")
//	os.Exit(r.ExitCode)
package report
