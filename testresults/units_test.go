package testresults_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/testresults"
)

func TestAssign(t *testing.T) {
	c := func(unit, name string) testresults.Case {
		return testresults.Case{Unit: unit, Name: name, Status: testresults.Passed}
	}
	tests := []struct {
		name      string
		cases     []testresults.Case
		units     []string
		want      map[string][]string // unit to case names
		unmatched []string
	}{
		{"one unit takes all", []testresults.Case{c("example.com/m/x", "T1"), c("other", "T2")}, []string{"./api"},
			map[string][]string{"./api": {"T1", "T2"}}, nil},
		{"exact", []testresults.Case{c("spec/a_spec.rb", "A"), c("spec/b_spec.rb", "B")}, []string{"spec/a_spec.rb", "spec/b_spec.rb"},
			map[string][]string{"spec/a_spec.rb": {"A"}, "spec/b_spec.rb": {"B"}}, nil},
		{"cleaned", []testresults.Case{c("./spec/a_spec.rb", "A")}, []string{"spec/a_spec.rb", "spec/b_spec.rb"},
			map[string][]string{"spec/a_spec.rb": {"A"}}, nil},
		{"package path suffix", []testresults.Case{c("example.com/m/api", "T1"), c("example.com/m/db", "T2")}, []string{"./api", "./db/"},
			map[string][]string{"./api": {"T1"}, "./db/": {"T2"}}, nil},
		{"ambiguous suffix", []testresults.Case{c("example.com/m/x/api", "T1")}, []string{"./x/api", "./api"},
			map[string][]string{"./x/api": {"T1"}}, nil},
		{"two units as good", []testresults.Case{c("a/b/api", "T1")}, []string{"./api", "api/"},
			map[string][]string{}, []string{"T1"}},
		{"no match", []testresults.Case{c("elsewhere", "T1")}, []string{"./api", "./db"},
			map[string][]string{}, []string{"T1"}},
		{"suffix is a whole segment", []testresults.Case{c("m/xapi", "T1")}, []string{"api", "db"},
			map[string][]string{}, []string{"T1"}},
		{"longest package path suffix", []testresults.Case{c("example.com/m/api/v2", "T1"), c("example.com/m/apix", "T2")}, []string{"./api", "./api/v2"},
			map[string][]string{"./api/v2": {"T1"}}, []string{"T2"}},
		{"dotted file path", []testresults.Case{c("spec.a_spec", "A"), c("tests.test_b.TestClass", "B"), c("tests.test_bx", "C")}, []string{"spec/a_spec.rb", "tests/test_b.py"},
			map[string][]string{"spec/a_spec.rb": {"A"}, "tests/test_b.py": {"B"}}, []string{"C"}},
		{"dots only for files", []testresults.Case{c("api.v2", "T1")}, []string{"./api/v2", "./db"},
			map[string][]string{}, []string{"T1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			byUnit, unmatched := testresults.Assign(tt.cases, tt.units)
			got := make(map[string][]string)
			for u, cs := range byUnit {
				for _, c := range cs {
					got[u] = append(got[u], c.Name)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for u, names := range tt.want {
				if !slices.Equal(got[u], names) {
					t.Errorf("unit %s: got %v, want %v", u, got[u], names)
				}
			}
			var un []string
			for _, c := range unmatched {
				un = append(un, c.Name)
			}
			if !slices.Equal(un, tt.unmatched) {
				t.Errorf("unmatched: got %v, want %v", un, tt.unmatched)
			}
		})
	}
}

func TestOutcomeAndFailedNames(t *testing.T) {
	p, f, s := testresults.Passed, testresults.Failed, testresults.Skipped
	cs := func(st ...testresults.Status) []testresults.Case {
		var out []testresults.Case
		for i, x := range st {
			out = append(out, testresults.Case{Unit: "u", Name: string(rune('A' + i)), Status: x})
		}
		return out
	}
	outcomes := []struct {
		cases []testresults.Case
		want  testresults.Status
	}{
		{nil, ""}, {cs(p), p}, {cs(s, s), s}, {cs(s, p), p}, {cs(p, f, s), f},
	}
	for _, o := range outcomes {
		if got := testresults.Outcome(o.cases); got != o.want {
			t.Errorf("Outcome(%v): got %q, want %q", o.cases, got, o.want)
		}
	}
	cases := append(cs(p, f, s, f), testresults.Case{Unit: "u", Status: f}, testresults.Case{Unit: "u", Name: "B", Status: f})
	if got, want := testresults.FailedNames(cases), []string{"B", "D", "u"}; !slices.Equal(got, want) {
		t.Errorf("FailedNames: got %v, want %v", got, want)
	}
}

// A JUnit case names its unit by its testcase's file, else classname,
// else its suite's file, else name: the first that names a unit wins.
func TestAssignJUnitNames(t *testing.T) {
	doc := `<testsuites>
 <testsuite name="b" file="c"><testcase name="byFile" file="./a" classname="b"/><testcase name="byClass" classname="b"/><testcase name="bySuiteFile" classname="x"/></testsuite>
 <testsuite name="a"><testcase name="bySuiteName" classname="x"/><testcase name="fallsThrough" file="x" classname="c"/></testsuite>
 <testsuite name="y"><testcase name="none" classname="z"/></testsuite>
</testsuites>`
	cases, err := testresults.ParseJUnit(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	byUnit, unmatched := testresults.Assign(cases, []string{"a", "b", "c"})
	got := make(map[string][]string)
	for u, cs := range byUnit {
		for _, c := range cs {
			got[u] = append(got[u], c.Name)
		}
	}
	want := map[string][]string{"a": {"byFile", "bySuiteName"}, "b": {"byClass"}, "c": {"bySuiteFile", "fallsThrough"}}
	for _, u := range []string{"a", "b", "c"} {
		if !slices.Equal(got[u], want[u]) {
			t.Errorf("unit %s: got %v, want %v", u, got[u], want[u])
		}
	}
	if len(unmatched) != 1 || unmatched[0].Name != "none" {
		t.Errorf("unmatched: got %v, want the case none", unmatched)
	}
}
