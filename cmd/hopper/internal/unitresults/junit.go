package unitresults

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrJUnit: a JUnit file does not parse. The error says where.
var ErrJUnit = errors.New("JUnit file does not parse")

// junitSuite is a <testsuite>, or the <testsuites> root around them.
type junitSuite struct {
	XMLName xml.Name
	File    string       `xml:"file,attr"`
	Name    string       `xml:"name,attr"`
	Cases   []junitCase  `xml:"testcase"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr"`
	Time      string        `xml:"time,attr"`
	Failures  []junitFailed `xml:"failure"`
	Errors    []junitFailed `xml:"error"`
}

type junitFailed struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit reads a JUnit XML report over units: <testsuites> or a lone
// <testsuite>, nested suites included. Each testcase belongs to the unit
// its file attribute names, else its classname, else its suite's file or
// name (see Match); a unit passes when it has testcases and none failed or
// errored. Its duration is the sum of its testcases' times. A file that
// does not parse is ErrJUnit.
func JUnit(data []byte, units []string) (map[string]Unit, error) {
	var root junitSuite
	if err := xml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJUnit, err)
	}
	switch root.XMLName.Local {
	case "testsuites", "testsuite":
	default:
		return nil, fmt.Errorf("%w: root element <%s>, want <testsuites> or <testsuite>", ErrJUnit, root.XMLName.Local)
	}
	out := map[string]Unit{}
	var walk func(s junitSuite)
	walk = func(s junitSuite) {
		for _, c := range s.Cases {
			addCase(out, c, s, units)
		}
		for _, inner := range s.Suites {
			walk(inner)
		}
	}
	walk(root)
	return out, nil
}

// addCase adds testcase c of suite s to its unit's outcome.
func addCase(out map[string]Unit, c junitCase, s junitSuite, units []string) {
	var unit string
	ok := false
	for _, name := range []string{c.File, c.Classname, s.File, s.Name} {
		if name != "" {
			if unit, ok = Match(name, units); ok {
				break
			}
		}
	}
	if !ok {
		return
	}
	u, seen := out[unit]
	if !seen {
		u.Passed = true
	}
	if secs, err := strconv.ParseFloat(c.Time, 64); err == nil && secs > 0 {
		u.Duration += time.Duration(secs * float64(time.Second))
	}
	for _, f := range append(c.Failures, c.Errors...) {
		u.Passed = false
		msg := f.Message
		if msg == "" {
			msg = f.Text
		}
		u.Failures = append(u.Failures, Failure{Name: c.Name, Message: msg})
	}
	out[unit] = u
}
