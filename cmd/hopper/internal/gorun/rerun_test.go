package gorun

import (
	"regexp"
	"testing"

	"github.com/hopper-queue/hopper/testresults"
	"github.com/stretchr/testify/assert"
)

func tc(name string, s testresults.Status, msg string) testresults.Case {
	return testresults.Case{Unit: "p", Name: name, Status: s, Message: msg}
}

func TestRerunOnlyFailedTopLevelTests(t *testing.T) {
	cases := []testresults.Case{
		tc("TestA", testresults.Passed, ""), tc("TestB/sub", testresults.Failed, "bad"),
		tc("TestB", testresults.Failed, "failed"), tc("TestC", testresults.Failed, "x"), tc("TestD", testresults.Skipped, ""),
	}
	r := rerunOf(cases)
	assert.Equal(t, []string{"TestB", "TestC"}, r.Tests)
	assert.Equal(t, []testresults.Case{cases[0], cases[4]}, r.Kept)
}

// A failure outside any test, or a test cut short, runs the whole unit.
func TestRerunWholeUnit(t *testing.T) {
	for name, cases := range map[string][]testresults.Case{
		"package":     {tc("TestA", testresults.Failed, "x"), tc("", testresults.Failed, "panic")},
		"unfinished":  {tc("TestA", testresults.Failed, "test did not finish")},
		"none failed": {tc("TestA", testresults.Passed, "")},
		"nothing":     nil,
	} {
		assert.Nil(t, rerunOf(cases).Tests, name)
	}
}

func TestRunPatternMatchesExactlyItsTests(t *testing.T) {
	re := regexp.MustCompile(runPattern([]string{"TestA", "Test_B.x", "TestÜ+"}))
	for _, n := range []string{"TestA", "Test_B.x", "TestÜ+"} {
		assert.True(t, re.MatchString(n), n)
	}
	for _, n := range []string{"TestAB", "XTestA", "Test_Bxx", "TestÜÜ", "TestA|Test_B.x"} {
		assert.False(t, re.MatchString(n), n)
	}
}

func TestRefinableRun(t *testing.T) {
	assert.True(t, refinable(""))
	assert.True(t, refinable("TestA|TestB"))
	assert.False(t, refinable("TestA/sub"), "a subtest level")
	assert.False(t, refinable("Test("), "does not compile")
	assert.Equal(t, []string{"TestAB", "TestA"}, matching([]string{"TestAB", "TestB", "TestA"}, "TestA"))
}

func TestSelected(t *testing.T) {
	names := []string{"TestA", "TestB", "ExampleA"}
	assert.Equal(t, []string{"TestA", "ExampleA"}, Args{Run: "A$"}.Selected(names))
	assert.Equal(t, names, Args{Run: "TestA/x"}.Selected(names), "a subtest level: the binary says")
	assert.Equal(t, names, Args{}.Selected(names))
}

func TestOutsideTests(t *testing.T) {
	failed := []testresults.Case{tc("TestA", testresults.Failed, "x")}
	_, ok := outsideTests("p", failed, 1, "exit status 1")
	assert.False(t, ok, "a test failure alone")
	c, ok := outsideTests("p", failed, 2, "exit status 2")
	assert.True(t, ok, "a panic or timeout exits 2")
	assert.Equal(t, "", c.Name)
	assert.True(t, c.Failed())
	_, ok = outsideTests("p", []testresults.Case{tc("TestA", testresults.Passed, "")}, 1, "exit status 1")
	assert.True(t, ok, "failed with every test passing: TestMain or init")
}
