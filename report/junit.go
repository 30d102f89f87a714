package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
)

// The JUnit XML report is for CI systems (GitLab, Jenkins, GitHub
// annotations, CircleCI), which render it without knowing hopper. It holds
// one <testsuite> with one <testcase> per unit: manifest
// units in manifest order, then any unit only the log mentions.
//
//   - name is the unit id; classname the build's unit type, or "hopper";
//     time the duration of the unit's last attempt, in seconds.
//   - A unit finalized failed has a <failure> whose message holds the reason
//     and the first error's class and message, and whose text lists every
//     error with its backtrace.
//   - A unit never finalized has an <error>: no result exists for it.
//   - A flaky unit passes, with "flaky: passed after N retries" in its
//     <system-out>, which GitLab and Jenkins show beside the test; reclaims
//     and abandonments are noted there too.
//
// A verdict other than passed that no unit explains (missing, expired,
// init_failed, an empty build, too few examples, Redis unreachable) adds one
// test case named "build <id>" carrying the headline, so that the JUnit file
// is never greener than the verdict. A reading error (unreachable, corrupt)
// or a refused join always adds it, and the manifest units with no finalized event read are
// errors "no result read", not "never finalized": their events may be in
// the part of the log that was not read.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	// Earlier failed attempts of a test: flakyFailure when it passed in
	// the end, rerunFailure when it failed again (see junit_tests.go).
	FlakyFailures []junitRerun `xml:"flakyFailure,omitempty"`
	RerunFailures []junitRerun `xml:"rerunFailure,omitempty"`
	SystemOut     string       `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit returns the JUnit XML report, with its XML declaration and a
// trailing newline.
func (r *Report) JUnit() ([]byte, error) {
	units := r.unitSuites()
	unitProblems := 0
	for _, s := range units {
		unitProblems += s.Failures + s.Errors
	}
	doc := junitSuites{Name: "hopper", Time: junitSeconds(r.wallMS()),
		Suites: append([]junitSuite{r.junitSuite(unitProblems)}, units...)}
	for _, s := range doc.Suites {
		doc.Tests, doc.Failures, doc.Errors = doc.Tests+s.Tests, doc.Failures+s.Failures, doc.Errors+s.Errors
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("report: encoding JUnit of build %s: %w", r.BuildID, err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// WriteJUnit writes the JUnit XML report to path, creating its parent
// folders.
func (r *Report) WriteJUnit(path string) error {
	b, err := r.JUnit()
	if err != nil {
		return err
	}
	return writeFile(path, b)
}

// junitSuite is the build's own suite; unitProblems counts the failures
// and errors of the units' own suites.
func (r *Report) junitSuite(unitProblems int) junitSuite {
	s := junitSuite{
		Name: "hopper build " + r.BuildID,
		Properties: []junitProperty{
			{Name: "build_id", Value: r.BuildID},
			{Name: "verdict", Value: string(r.Verdict)},
			{Name: "exit_code", Value: fmt.Sprint(r.ExitCode)},
		},
	}
	classname := "hopper"
	if r.Meta != nil && r.Meta.UnitType != "" {
		classname = r.Meta.UnitType
	}
	failed := make(map[string]FailedUnit)
	for _, f := range r.log().Failed() {
		failed[f.UnitID] = f
	}
	flaky := make(map[string]bool)
	for _, u := range r.log().Flaky() {
		flaky[u] = true
	}
	abandoned := make(map[string]bool)
	for _, u := range r.log().Abandoned() {
		abandoned[u] = true
	}
	retries, reclaims := r.log().RetryCounts(), r.log().ReclaimCounts()
	unfinalized := make(map[string]UnfinalizedUnit)
	for _, u := range r.log().NeverFinalized(r.junitUnits()) {
		unfinalized[u.UnitID] = u
	}

	for _, u := range r.junitUnits() {
		if r.testsOf(u).final != nil {
			continue // in a suite of its own, one case per test
		}
		ms, _ := r.log().lastDuration(u)
		c := junitCase{Name: u, Classname: classname, Time: junitSeconds(ms)}
		var notes []string
		if f, ok := failed[u]; ok {
			c.Failure = failureOf(f)
			s.Failures++
		} else if nf, ok := unfinalized[u]; ok && r.Err != nil {
			// Reading stopped before the log's end: the unit's events may
			// be among those unread, so "never delivered" could be false.
			c.Error = &junitProblem{Message: "no result read: the build's state could not be read (see build " + r.BuildID + ")", Type: string(r.Verdict)}
			s.Errors++
		} else if ok {
			holder := "never delivered"
			if nf.LastWorkerID != nil {
				holder = "last worker " + *nf.LastWorkerID
			}
			c.Error = &junitProblem{Message: "never finalized (" + holder + ")", Type: "never_finalized"}
			s.Errors++
		}
		if flaky[u] {
			n, _ := retries.Get(u)
			notes = append(notes, fmt.Sprintf("flaky: passed after %d retries", n))
		}
		if n, ok := reclaims.Get(u); ok {
			notes = append(notes, fmt.Sprintf("reclaimed %d time(s) from a lost worker", n))
		}
		if abandoned[u] {
			notes = append(notes, "abandoned: an attempt exceeded --max-unit-duration")
		}
		c.SystemOut = strings.Join(notes, "\n")
		s.Cases = append(s.Cases, c)
	}
	r.addBuildCase(&s, unitProblems)
	s.Tests = len(s.Cases)
	s.Time = junitSeconds(r.wallMS())
	return s
}

// addBuildCase adds to s a case of the build itself when the verdict is
// not explained by the units' cases: a reading error or a refused join
// never is, whatever the units show, and its cause is only in the
// headline.
func (r *Report) addBuildCase(s *junitSuite, unitProblems int) {
	if r.Verdict == VerdictPassed || s.Failures+s.Errors+unitProblems > 0 && r.Err == nil && r.Verdict != VerdictRefused {
		return
	}
	c := junitCase{Name: "build " + r.BuildID, Classname: "hopper", Time: junitSeconds(0)}
	problem := &junitProblem{Message: r.Headline, Type: string(r.Verdict), Text: strings.Join(r.Details, "\n")}
	if r.Verdict == VerdictFailed {
		c.Failure = problem
		s.Failures++
	} else {
		c.Error = problem
		s.Errors++
	}
	s.Cases = append(s.Cases, c)
}

// junitUnits is every unit the report knows: the manifest in order, then
// units only the log mentions.
func (r *Report) junitUnits() []string {
	units := append([]string(nil), r.Manifest...)
	seen := make(map[string]bool, len(units))
	for _, u := range units {
		seen[u] = true
	}
	for _, u := range r.log().Units() {
		if !seen[u] {
			units = append(units, u)
		}
	}
	return units
}

// failureOf describes a failed unit: the message is one line (reason, then
// the first error); the text holds every error in full.
func failureOf(f FailedUnit) *junitProblem {
	reason := "failed"
	if f.Reason != nil {
		reason = *f.Reason
	}
	p := &junitProblem{Message: reason, Type: reason}
	if e, ok := f.FirstError(); ok {
		p.Message = fmt.Sprintf("%s: %s: %s", reason, e.Class, firstLine(e.Message))
		if e.Class != "" {
			p.Type = e.Class
		}
	}
	var text strings.Builder
	fmt.Fprintf(&text, "%s (worker %s)\n", reason, f.WorkerID)
	for _, e := range errorEntries(f.Errors) {
		if e.Message == "" && e.Class == "" {
			continue // the truncation marker, or an entry with nothing to show
		}
		text.WriteString("\n")
		if e.Description != "" {
			fmt.Fprintf(&text, "%s\n", e.Description)
		}
		fmt.Fprintf(&text, "%s: %s\n", e.Class, e.Message)
		for _, line := range e.Backtrace {
			fmt.Fprintf(&text, "    %s\n", line)
		}
	}
	p.Text = text.String()
	return p
}

func junitSeconds(ms float64) string {
	return fmt.Sprintf("%.3f", ms/1000)
}
