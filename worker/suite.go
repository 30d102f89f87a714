package worker

import (
	"github.com/hopper-queue/hopper/fingerprint"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/timings"
)

// Suite is what a build runs, as each worker computes it. Every worker of a
// build must compute the same units, unit type, command and revision: the
// first to arrive publishes them, and the others compare fingerprints.
type Suite struct {
	// Units are the unit ids, in the order they are served when nothing
	// is known of their durations: what Run's Func is given, one at a time.
	Units []string
	// UnitType says what the units are ("file", "package", ...); default
	// "file". Part of the fingerprint and of the suite's identity (ID).
	UnitType string
	// Command names how the units are run, e.g. "go test {unit}". It is
	// never run: Run's Func runs each unit. It goes into the fingerprint,
	// so that workers about to run units another way refuse the build, and
	// into the suite's identity (ID), which keys its timings.
	Command string
	// Revision is the source revision under test, when known; part of the
	// fingerprint, so that workers of another revision refuse the build.
	Revision string
	// Project names what the suite belongs to: a Go module's path, a
	// repository's root and remote. With the unit type and the command it
	// makes the suite's identity (ID), under which its timings are kept:
	// two projects that both run "go test {unit}" keep theirs apart. Not
	// part of the fingerprint. Empty: the command and unit type alone.
	Project string
	// Seed is the ordering seed, when there is one; written to the
	// build's meta for people to read, and not used otherwise.
	Seed string
	// TotalExamples counts the tests in the units, when known: the report's
	// empty-build and --min-examples rules count it instead of the units.
	TotalExamples int64
	// LoadErrors are errors met while listing the units. If the worker that
	// publishes has any, the build fails to initialize and every worker's
	// Run returns them (queue.InitFailedError).
	LoadErrors []string
	// Expected is what earlier builds of the suite measured of its units
	// (see package timings). The publisher queues the units longest
	// expected first; it is not part of the fingerprint, so workers with
	// other timings, or none, join the same build.
	Expected timings.Table
}

// Fingerprint is the suite's fingerprint, as published in meta.
func (s Suite) Fingerprint() fingerprint.Fingerprint {
	return fingerprint.Of(fingerprint.Inputs{
		UnitIDs: s.Units, UnitType: s.unitType(), Command: s.Command, Revision: s.Revision,
	})
}

// ID names the suite across its builds (see fingerprint.SuiteID): what
// is kept between builds, its timings, is kept under it.
func (s Suite) ID() string {
	return fingerprint.SuiteID(s.Project, fingerprint.Inputs{UnitType: s.unitType(), Command: s.Command})
}

func (s Suite) unitType() string {
	if s.UnitType == "" {
		return queue.DefaultUnitType
	}
	return s.UnitType
}

// manifest is what this worker publishes if it comes first.
func (s Suite) manifest(c Config) queue.Manifest {
	return queue.Manifest{
		UnitIDs:       s.Units,
		Serve:         s.serveOrder(),
		UnitType:      s.unitType(),
		TotalExamples: s.TotalExamples,
		LoadErrors:    s.LoadErrors,
		Seed:          s.Seed,
		Revision:      s.Revision,
		Command:       s.Command,
		Fingerprint:   s.Fingerprint(),
		Budgets:       c.budgets(),
		Timeout:       c.Timeout,
		TTL:           c.TTL,
	}
}

// serveOrder is the order the units are queued in if this worker publishes:
// longest expected first, or as given when nothing is expected.
func (s Suite) serveOrder() []string {
	if len(s.Expected) == 0 {
		return nil
	}
	return timings.LongestFirst(s.Units, s.Expected)
}
