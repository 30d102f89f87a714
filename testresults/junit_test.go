package testresults_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/testresults"
)

// rspec is the shape rspec_junit_formatter writes: one suite, file on each
// case.
const rspec = `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="rspec" tests="3" failures="1" errors="0" skipped="1" time="0.5">
<testcase classname="spec.a_spec" name="A works" file="./spec/a_spec.rb" time="0.25"></testcase>
<testcase classname="spec.a_spec" name="A breaks" file="./spec/a_spec.rb" time="0.125">
<failure message="expected 1&#10;got 2" type="RSpec::Expectations::ExpectationNotMetError">expected 1
got 2
./spec/a_spec.rb:9</failure>
<system-out>hello</system-out>
</testcase>
<testcase classname="spec.b_spec" name="B later" file="./spec/b_spec.rb" time="0"><skipped message="pending"/></testcase>
</testsuite>`

// nested is a Surefire or pytest shape: <testsuites>, nested suites, no
// file attributes, an <error>.
const nested = `<testsuites>
 <testsuite name="outer" file="pkg/outer.py">
  <testcase classname="pkg.Outer" name="t1" time="x"/>
  <testsuite name="inner">
   <testcase classname="pkg.Inner" name="t2"><error type="KeyError"/></testcase>
  </testsuite>
 </testsuite>
 <testsuite name="plain"><testcase name="t3"><skipped/></testcase></testsuite>
</testsuites>`

func TestParseJUnit(t *testing.T) {
	tests := []struct {
		name, in string
		want     []brief
	}{
		{"rspec", rspec, []brief{
			{"./spec/a_spec.rb", "A works", testresults.Passed, ""},
			{"./spec/a_spec.rb", "A breaks", testresults.Failed, "expected 1"},
			{"./spec/b_spec.rb", "B later", testresults.Skipped, "pending"},
		}},
		{"nested", nested, []brief{
			{"pkg/outer.py", "t1", testresults.Passed, ""},
			{"pkg/outer.py", "t2", testresults.Failed, "KeyError"},
			{"plain", "t3", testresults.Skipped, "skipped"},
		}},
		{"empty suite", `<testsuites/>`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cases, err := testresults.ParseJUnit(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			equalBriefs(t, cases, tt.want)
		})
	}
}

func TestParseJUnitDetail(t *testing.T) {
	cases, err := testresults.ParseJUnit(strings.NewReader(rspec))
	if err != nil {
		t.Fatal(err)
	}
	if cases[0].Duration != 250*time.Millisecond {
		t.Errorf("duration: got %v, want 250ms", cases[0].Duration)
	}
	if cases[1].Output != "expected 1\ngot 2\n./spec/a_spec.rb:9\nhello" {
		t.Errorf("output: got %q, want the failure's text then system-out", cases[1].Output)
	}
	if cases[1].Suite != "rspec" {
		t.Errorf("suite: got %q, want rspec", cases[1].Suite)
	}
}

func TestParseJUnitRefusesOtherInput(t *testing.T) {
	for _, in := range []string{"", "PASS\nok m/p 0.1s\n", `{"Action":"pass"}`, `<html><body/></html>`, `<testsuite><testcase>`} {
		_, err := testresults.ParseJUnit(strings.NewReader(in))
		if err == nil || !errors.Is(err, testresults.ErrNotJUnit) || !strings.HasPrefix(err.Error(), "not JUnit XML: ") {
			t.Errorf("ParseJUnit(%q): got error %v, want one starting \"not JUnit XML: \"", in, err)
		}
	}
}
