package unitresults_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/unitresults"
)

func TestMatch(t *testing.T) {
	units := []string{"./api", "./api/v2", "errors", "spec/a_spec.rb", "tests/test_b.py"}
	for _, tc := range []struct{ name, want string }{
		{"errors", "errors"},
		{"example.com/m/api", "./api"},
		{"example.com/m/api/v2", "./api/v2"},
		{"./spec/a_spec.rb", "spec/a_spec.rb"},
		{"spec.a_spec", "spec/a_spec.rb"},
		{"tests.test_b", "tests/test_b.py"},
		{"tests.test_b.TestClass", "tests/test_b.py"},
		{"example.com/m/apix", ""},
		{"other", ""},
	} {
		got, ok := unitresults.Match(tc.name, units)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Match(%q) = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}

func TestJUnitShapes(t *testing.T) {
	units := []string{"a", "b"}
	for name, doc := range map[string]string{
		"lone testsuite": `<testsuite name="x"><testcase name="t" classname="a" time="1.5"/><testcase name="u" file="b"><error message="boom"/></testcase></testsuite>`,
		"nested suites":  `<testsuites><testsuite name="outer"><testsuite name="a"><testcase name="t" time="1.5"/></testsuite><testsuite file="b"><testcase name="u"><error>boom</error></testcase></testsuite></testsuite></testsuites>`,
	} {
		got, err := unitresults.JUnit([]byte(doc), units)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a := got["a"]; !a.Passed || a.Duration != 1500*time.Millisecond {
			t.Errorf("%s: a = %+v, want passed in 1.5s", name, a)
		}
		if b := got["b"]; b.Passed || len(b.Failures) != 1 || b.Failures[0].Message != "boom" {
			t.Errorf("%s: b = %+v, want failed with boom", name, b)
		}
	}
	for _, bad := range []string{``, `<testsuites><testcase`, `<html></html>`} {
		if _, err := unitresults.JUnit([]byte(bad), units); !errors.Is(err, unitresults.ErrJUnit) {
			t.Errorf("JUnit(%q) = %v, want ErrJUnit", bad, err)
		}
	}
}

func TestGoTestJSONNotFound(t *testing.T) {
	if _, found := unitresults.GoTestJSON([]byte("ok  \terrors\t0.1s\n{not json}\n"), []string{"errors"}); found {
		t.Error("plain go test output read as go test -json")
	}
}
