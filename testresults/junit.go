package testresults

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ErrNotJUnit is wrapped by ParseJUnit's errors for input that is not a
// JUnit XML document.
var ErrNotJUnit = errors.New("not JUnit XML")

// junitNode is a <testsuites> or <testsuite> element: suites nest, and the
// document's root may be either.
type junitNode struct {
	XMLName xml.Name
	Name    string          `xml:"name,attr"`
	File    string          `xml:"file,attr"`
	Suites  []junitNode     `xml:"testsuite"`
	Cases   []junitTestcase `xml:"testcase"`
}

type junitTestcase struct {
	Name      string         `xml:"name,attr"`
	Classname string         `xml:"classname,attr"`
	File      string         `xml:"file,attr"`
	Time      string         `xml:"time,attr"`
	Failures  []junitOutcome `xml:"failure"`
	Errors    []junitOutcome `xml:"error"`
	Skipped   *junitOutcome  `xml:"skipped"`
	SystemOut string         `xml:"system-out"`
	SystemErr string         `xml:"system-err"`
}

type junitOutcome struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// ParseJUnit reads a JUnit XML document (root <testsuites> or <testsuite>,
// suites nested to any depth): one Case per <testcase>, in document order.
// A case's Unit is its file attribute, else its suite's, else its
// classname, else its suite's name, else "". A case with <failure> or <error> is
// Failed, with <skipped> Skipped, else Passed. Anything else (not XML, or
// another root element) is an error starting "not JUnit XML: ", wrapping
// ErrNotJUnit.
func ParseJUnit(r io.Reader) ([]Case, error) {
	var root junitNode
	if err := xml.NewDecoder(r).Decode(&root); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJUnit, err)
	}
	switch root.XMLName.Local {
	case "testsuites", "testsuite":
	default:
		return nil, fmt.Errorf("%w: root element <%s>, want <testsuites> or <testsuite>", ErrNotJUnit, root.XMLName.Local)
	}
	var cases []Case
	var walk func(n junitNode, file string)
	walk = func(n junitNode, file string) {
		if n.File != "" {
			file = n.File
		}
		for _, tc := range n.Cases {
			cases = append(cases, junitCaseOf(tc, n.Name, file))
		}
		for _, s := range n.Suites {
			walk(s, file)
		}
	}
	walk(root, "")
	return cases, nil
}

func junitCaseOf(tc junitTestcase, suite, suiteFile string) Case {
	c := Case{Unit: firstNonEmpty(tc.File, suiteFile, tc.Classname, suite), Suite: suite, Name: tc.Name, Status: Passed,
		names: [4]string{tc.File, tc.Classname, suiteFile, suite}}
	if secs, err := strconv.ParseFloat(strings.TrimSpace(tc.Time), 64); err == nil && secs > 0 && secs < 1e9 {
		c.Duration = time.Duration(secs * float64(time.Second))
	}
	var text []string
	problems := append(append([]junitOutcome(nil), tc.Failures...), tc.Errors...)
	switch {
	case len(problems) > 0:
		c.Status = Failed
		c.Message = outcomeMessage(problems[0], "failed")
		for _, p := range problems {
			text = append(text, strings.TrimSpace(p.Text))
		}
	case tc.Skipped != nil:
		c.Status = Skipped
		c.Message = outcomeMessage(*tc.Skipped, "skipped")
	}
	text = append(text, strings.TrimSpace(tc.SystemOut), strings.TrimSpace(tc.SystemErr))
	c.Output = joinNonEmpty(text, "\n")
	return c
}

// outcomeMessage is one line: the message attribute, else the type, else
// the text's first line, else fallback.
func outcomeMessage(o junitOutcome, fallback string) string {
	text, _, _ := strings.Cut(strings.TrimSpace(o.Text), "\n")
	return firstNonEmpty(firstLineOf(o.Message), o.Type, text, fallback)
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

func joinNonEmpty(ss []string, sep string) string {
	var kept []string
	for _, s := range ss {
		if s != "" {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, sep)
}
