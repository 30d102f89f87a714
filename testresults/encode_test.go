package testresults_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/testresults"
)

func TestEncodeRoundTrip(t *testing.T) {
	cases := []testresults.Case{
		{Unit: "p", Name: "TestA", Status: testresults.Passed, Output: "chatter"},
		{Unit: "p", Name: "TestB", Status: testresults.Failed, Message: "boom", Output: "x_test.go:3: boom\n"},
	}
	got, omitted, err := testresults.Decode(testresults.Encode(cases, 0))
	if err != nil || omitted != 0 || len(got) != 2 {
		t.Fatalf("got %v, %d, %v; want both cases back", got, omitted, err)
	}
	if got[0].Output != "" {
		t.Errorf("a passed case's output is kept: %q", got[0].Output)
	}
	if got[1] != cases[1] {
		t.Errorf("failed case: got %+v, want %+v", got[1], cases[1])
	}
	if testresults.Encode(nil, 0) != nil {
		t.Error("no cases encode as something")
	}
}

// However many tests a unit has and however much they print, what is kept
// fits the limit, failures first.
func TestEncodeBounded(t *testing.T) {
	var cases []testresults.Case
	for i := range 2000 {
		cases = append(cases, testresults.Case{Unit: "p", Name: fmt.Sprintf("TestPass%04d", i), Status: testresults.Passed})
	}
	for i := range 50 {
		cases = append(cases, testresults.Case{Unit: "p", Name: fmt.Sprintf("TestFail%02d", i), Status: testresults.Failed,
			Message: "bad", Output: strings.Repeat("é", 10_000)})
	}
	const limit = 32 << 10
	b := testresults.Encode(cases, limit)
	if len(b) > limit {
		t.Fatalf("encoded %d bytes, over the limit %d", len(b), limit)
	}
	got, omitted, err := testresults.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got)+omitted != len(cases) {
		t.Errorf("kept %d and omitted %d of %d cases", len(got), omitted, len(cases))
	}
	if n := len(testresults.FailedNames(got)); n != 50 {
		t.Errorf("kept %d failed cases, want all 50 before any pass", n)
	}
	for _, c := range got {
		if c.Failed() && len(c.Output) > 300 {
			t.Errorf("failed output of %d bytes kept", len(c.Output))
		}
	}
}
