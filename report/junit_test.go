package report_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/report"
)

// junitDoc is the JUnit XML as a CI system reads it.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []struct {
		Name       string `xml:"name,attr"`
		Tests      int    `xml:"tests,attr"`
		Failures   int    `xml:"failures,attr"`
		Errors     int    `xml:"errors,attr"`
		Time       string `xml:"time,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	SystemOut string        `xml:"system-out"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func parseJUnit(t testing.TB, r *report.Report) junitDoc {
	t.Helper()
	b, err := r.JUnit()
	require.NoError(t, err)
	require.Truef(t, bytes.HasPrefix(b, []byte(xml.Header)), "got %q, want an XML declaration first", b[:min(len(b), 40)])
	var doc junitDoc
	require.NoError(t, xml.Unmarshal(b, &doc), "JUnit not well-formed:\n%s", b)
	require.Len(t, doc.Suites, 1, "want exactly one testsuite")
	return doc
}

func TestJUnitOfAFailedBuild(t *testing.T) {
	doc := parseJUnit(t, failedBuild(t))
	s := doc.Suites[0]
	require.Equal(t, "hopper build b1", s.Name)
	require.Equalf(t, [3]int{4, 1, 0}, [3]int{s.Tests, s.Failures, s.Errors}, "got tests, failures, errors %d %d %d", s.Tests, s.Failures, s.Errors)
	require.Equal(t, [3]int{4, 1, 0}, [3]int{doc.Tests, doc.Failures, doc.Errors})
	require.Equal(t, "0.013", s.Time, "the build's wall time, from ready_at to the last finalized event")
	require.Equal(t, "0.013", doc.Time)

	byName := map[string]junitCase{}
	var names []string
	for _, c := range s.Cases {
		byName[c.Name] = c
		names = append(names, c.Name)
		require.Equalf(t, "package", c.Classname, "%s: got classname %q, want the unit type", c.Name, c.Classname)
	}
	require.Equal(t, []string{"./a", "./b", "./c", "./d"}, names)

	a := byName["./a"]
	require.Equal(t, "1.200", a.Time)
	require.Nil(t, a.Failure)
	require.Nil(t, a.Error)
	require.Empty(t, a.SystemOut)

	b := byName["./b"]
	require.Nil(t, b.Failure)
	require.Equal(t, "0.800", b.Time, "the last attempt's duration")
	require.Equal(t, "flaky: passed after 1 retries", b.SystemOut)

	c := byName["./c"]
	require.NotNil(t, c.Failure)
	require.Equal(t, "test_failure: AssertionError: want 1", c.Failure.Message)
	require.Equal(t, "AssertionError", c.Failure.Type)
	require.Contains(t, c.Failure.Text, "test_failure (worker w1)")
	require.Contains(t, c.Failure.Text, "AssertionError: want 1\ngot 2\n    x_test.go:3")
	require.Contains(t, c.Failure.Text, "Second: s")

	d := byName["./d"]
	require.Nil(t, d.Failure)
	require.Contains(t, d.SystemOut, "reclaimed 1 time(s)")
	require.Contains(t, d.SystemOut, "abandoned")

	props := map[string]string{}
	for _, p := range s.Properties {
		props[p.Name] = p.Value
	}
	require.Equal(t, map[string]string{"build_id": "b1", "verdict": "failed", "exit_code": "1"}, props)
}

func TestJUnitNeverFinalizedUnitsAreErrors(t *testing.T) {
	log := newLog(t).delivered("a", "w1").passed("a", "w1", 10).delivered("b", "w2").events()
	obs := complete([]string{"a", "b", "c"}, 1, log)
	obs.Meta.UnitType = ""
	obs.Stall = &report.Stall{Cause: report.StallTimeout}
	doc := parseJUnit(t, report.Judge(obs, report.Options{}))
	s := doc.Suites[0]
	require.Equal(t, [3]int{3, 0, 2}, [3]int{s.Tests, s.Failures, s.Errors})
	require.Equal(t, "hopper", s.Cases[0].Classname, "no unit type: classname hopper")
	require.Equal(t, "never finalized (last worker w2)", s.Cases[1].Error.Message)
	require.Equal(t, "never finalized (never delivered)", s.Cases[2].Error.Message)
}

func TestJUnitIsNeverGreenerThanTheVerdict(t *testing.T) {
	tests := []struct {
		name    string
		obs     report.Observation
		failure bool // a <failure>, else an <error>
	}{
		{"missing", report.Observation{BuildID: "b1"}, false},
		{"expired", report.Observation{BuildID: "b1", Presence: report.PresenceTombstone}, false},
		{"empty build", complete(nil, 0, nil), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := report.Judge(tc.obs, report.Options{})
			s := parseJUnit(t, r).Suites[0]
			require.Len(t, s.Cases, 1)
			c := s.Cases[0]
			require.Equal(t, "build b1", c.Name)
			problem := c.Error
			if tc.failure {
				problem = c.Failure
				require.Equal(t, [3]int{1, 1, 0}, [3]int{s.Tests, s.Failures, s.Errors})
			} else {
				require.Equal(t, [3]int{1, 0, 1}, [3]int{s.Tests, s.Failures, s.Errors})
			}
			require.NotNil(t, problem)
			require.Equal(t, r.Headline, problem.Message)
		})
	}
}

func TestJUnitEscapesWhatXMLCannotHold(t *testing.T) {
	log := newLog(t).delivered("a<&>\"", "w1").failed("a<&>\"", "w1", 1, boom("E]]>", "bell \a and <tag> & \x00")).events()
	r := report.Judge(complete([]string{"a<&>\""}, 1, log), report.Options{})
	s := parseJUnit(t, r).Suites[0]
	require.Equal(t, "a<&>\"", s.Cases[0].Name)
	require.Contains(t, s.Cases[0].Failure.Message, "<tag> &")
}

func TestWriteJUnitCreatesFolders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reports", "junit.xml")
	require.NoError(t, failedBuild(t).WriteJUnit(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(b), "</testsuites>\n"))
}

// When the log could not be read (Redis gone mid-read, an entry that is not
// an event), the JUnit file must carry the cause the console gives, and must
// not claim that the units whose events went unread were never delivered:
// CI shows the test cases, not the console.
func TestJUnitOfAnUnreadableLog(t *testing.T) {
	partial := newLog(t).delivered("a", "w1").passed("a", "w1", 10).events()
	for _, cause := range []error{
		fmt.Errorf("%w: attempts entry 5-0: events: malformed event: no type", report.ErrCorrupt),
		fmt.Errorf("%w: XRANGE: i/o timeout", report.ErrUnreachable),
	} {
		t.Run(cause.Error(), func(t *testing.T) {
			obs := complete([]string{"a", "b"}, 2, partial)
			obs.Err = cause
			r := report.Judge(obs, report.Options{})
			s := parseJUnit(t, r).Suites[0]
			var build *junitCase
			for i, c := range s.Cases {
				if c.Name == "build b1" {
					build = &s.Cases[i]
				}
				if c.Error != nil && strings.Contains(c.Error.Message, "never delivered") {
					t.Errorf("got %s: %q, want no claim about a unit whose events were not read", c.Name, c.Error.Message)
				}
			}
			require.NotNilf(t, build, "got cases %+v, want one named \"build b1\" with the cause", s.Cases)
			require.NotNil(t, build.Error)
			require.Equalf(t, r.Headline, build.Error.Message, "got message %q, want the headline %q", build.Error.Message, r.Headline)
			require.Equal(t, string(r.Verdict), build.Error.Type)
			require.Equalf(t, s.Errors+s.Failures, s.Tests-1, "got tests, failures, errors %d %d %d, want every case but a's to be an error", s.Tests, s.Failures, s.Errors)
		})
	}
}
