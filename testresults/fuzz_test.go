package testresults_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/hopper-queue/hopper/testresults"
)

// Whatever a command printed, the parsers return cases that hold one of
// the three statuses (and, from go test -json, name a unit), or (JUnit
// only) ErrNotJUnit.
func checkCases(t *testing.T, cases []testresults.Case, needUnit bool) {
	t.Helper()
	for _, c := range cases {
		if needUnit && c.Unit == "" {
			t.Errorf("case %+v names no unit", c)
		}
		switch c.Status {
		case testresults.Passed, testresults.Failed, testresults.Skipped:
		default:
			t.Errorf("case %+v has status %q", c, c.Status)
		}
		if c.Failed() && c.Message == "" {
			t.Errorf("failed case %+v has no message", c)
		}
	}
}

func FuzzParseGoTestJSON(f *testing.F) {
	if b, err := os.ReadFile("testdata/gotest.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"Action":"run","Package":"p","Test":"T"}`))
	f.Add([]byte("{\n}\n{\"Action\":\"fail\",\"Package\":\"\"}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		cases, err := testresults.ParseGoTestJSON(bytes.NewReader(in))
		if err != nil {
			t.Fatalf("an in-memory reader gave error %v", err)
		}
		checkCases(t, cases, true)
	})
}

func FuzzParseJUnit(f *testing.F) {
	f.Add([]byte(rspec))
	f.Add([]byte(nested))
	f.Add([]byte(`<testsuite><testcase name="x"><failure/></testcase></testsuite>`))
	f.Fuzz(func(t *testing.T, in []byte) {
		cases, err := testresults.ParseJUnit(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, testresults.ErrNotJUnit) {
				t.Fatalf("error %v does not wrap ErrNotJUnit", err)
			}
			return
		}
		checkCases(t, cases, false)
	})
}
