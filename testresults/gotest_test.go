package testresults_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/testresults"
)

// brief is what a test compares of a Case: output is checked apart.
type brief struct {
	Unit, Name string
	Status     testresults.Status
	Message    string
}

func briefs(cases []testresults.Case) []brief {
	var out []brief
	for _, c := range cases {
		out = append(out, brief{c.Unit, c.Name, c.Status, c.Message})
	}
	return out
}

func equalBriefs(t testing.TB, got []testresults.Case, want []brief) {
	t.Helper()
	g := briefs(got)
	if len(g) != len(want) {
		t.Fatalf("got %d cases %+v, want %d %+v", len(g), g, len(want), want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("case %d: got %+v, want %+v", i, g[i], want[i])
		}
	}
}

// testdata/gotest.json is real go test -json output of two packages: a
// passing, a failing (with a t.Log before its t.Errorf), a skipped test and
// subtests in one, a panicking test in the other.
func TestParseGoTestJSONRealOutput(t *testing.T) {
	f, err := os.Open("testdata/gotest.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := testresults.ParseGoTestJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	a, b := "example.com/m/a", "example.com/m/b"
	equalBriefs(t, cases, []brief{
		{a, "TestPass", testresults.Passed, ""},
		{a, "TestBad", testresults.Failed, "a_test.go:6: note"},
		{a, "TestSkip", testresults.Skipped, "a_test.go:7: not here"},
		{a, "TestSub", testresults.Failed, "failed"},
		{a, "TestSub/ok", testresults.Passed, ""},
		{a, "TestSub/bad", testresults.Failed, "a_test.go:10: boom"},
		{b, "TestPanics", testresults.Failed, "panic: oops [recovered, repanicked]"},
	})
	if !strings.Contains(cases[1].Output, "got 1, want 2") {
		t.Errorf("TestBad's output %q lacks its t.Errorf line", cases[1].Output)
	}
	if cases[0].Suite != a {
		t.Errorf("suite: got %q, want the package %q", cases[0].Suite, a)
	}
}

func TestParseGoTestJSON(t *testing.T) {
	const p = `"Package":"m/p"`
	tests := []struct {
		name, in string
		want     []brief
	}{
		{"empty", "", nil},
		{"not json at all", "ok  \tm/p\t0.1s\nFAIL\n", nil},
		{"mixed with a wrapper's lines", "running tests\n" +
			`{"Action":"run",` + p + `,"Test":"TestA"}` + "\n" +
			"{not json\n" +
			`{"Action":"pass",` + p + `,"Test":"TestA","Elapsed":1.5}`,
			[]brief{{"m/p", "TestA", testresults.Passed, ""}}},
		{"test never ended", `{"Action":"run",` + p + `,"Test":"TestHang"}` + "\n" +
			`{"Action":"output",` + p + `,"Test":"TestHang","Output":"panic: test timed out\n"}` + "\n" +
			`{"Action":"fail",` + p + `,"Elapsed":600}`,
			[]brief{{"m/p", "TestHang", testresults.Failed, "did not finish"}}},
		{"package fails with no test failed", `{"Action":"output",` + p + `,"Output":"# m/p\nx.go:1: syntax error\n"}` + "\n" +
			`{"Action":"fail",` + p + `,"Elapsed":0}`,
			[]brief{{"m/p", "", testresults.Failed, "package failed outside any test"}}},
		{"build failure of go 1.24", `{"ImportPath":"m/p [m/p.test]","Action":"build-output","Output":"x.go:1: bad\n"}` + "\n" +
			`{"Action":"start",` + p + `}` + "\n" +
			`{"Action":"output",` + p + `,"Output":"FAIL\tm/p [build failed]\n"}` + "\n" +
			`{"Action":"fail",` + p + `,"Elapsed":0,"FailedBuild":"m/p [m/p.test]"}`,
			[]brief{{"m/p", "", testresults.Failed, "package failed outside any test"}}},
		{"package passes: no case of its own", `{"Action":"run",` + p + `,"Test":"TestA"}` + "\n" +
			`{"Action":"pass",` + p + `,"Test":"TestA"}` + "\n" + `{"Action":"pass",` + p + `}`,
			[]brief{{"m/p", "TestA", testresults.Passed, ""}}},
		{"package killed mid-run", `{"Action":"start",` + p + `}`,
			[]brief{{"m/p", "", testresults.Failed, "package did not finish"}}},
		{"no package: not an event", `{"Action":"pass","Test":"TestA"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cases, err := testresults.ParseGoTestJSON(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			equalBriefs(t, cases, tt.want)
		})
	}
}

func TestParseGoTestJSONDuration(t *testing.T) {
	in := `{"Action":"pass","Package":"m/p","Test":"TestA","Elapsed":1.25}`
	cases, err := testresults.ParseGoTestJSON(strings.NewReader(in))
	if err != nil || len(cases) != 1 {
		t.Fatalf("got %v, %v; want one case", cases, err)
	}
	if cases[0].Duration != 1250*time.Millisecond {
		t.Errorf("duration: got %v, want 1.25s", cases[0].Duration)
	}
}

// A line longer than any fixed scanner buffer is still read.
func TestParseGoTestJSONLongLine(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	in := `{"Action":"output","Package":"m/p","Test":"TestA","Output":"` + long + `"}` + "\n" +
		`{"Action":"fail","Package":"m/p","Test":"TestA"}`
	cases, err := testresults.ParseGoTestJSON(strings.NewReader(in))
	if err != nil || len(cases) != 1 || len(cases[0].Output) != len(long) {
		t.Fatalf("got %d cases, err %v; want one with %d bytes of output", len(cases), err, len(long))
	}
}

// Each package's own end, with all it printed; a package with no tests,
// or only passing ones, is there though it gives no case.
func TestReadGoTestJSONPackages(t *testing.T) {
	in := `{"Action":"start","Package":"m/a"}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t0.5s\n"}
{"Action":"pass","Package":"m/a","Elapsed":0.5}
{"Action":"run","Package":"m/b","Test":"TestB"}
{"Action":"output","Package":"m/b","Test":"TestB","Output":"want 2\n"}
{"Action":"fail","Package":"m/b","Test":"TestB","Elapsed":0.1}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t1.25s\n"}
{"Action":"fail","Package":"m/b","Elapsed":1.25}
{"Action":"start","Package":"m/c"}`
	rep, err := testresults.ReadGoTestJSON(strings.NewReader(in))
	if err != nil || !rep.Found() {
		t.Fatalf("got %+v, %v; want events found", rep, err)
	}
	if len(rep.Packages) != 2 {
		t.Fatalf("packages: got %+v, want m/a and m/b, which ended", rep.Packages)
	}
	a, b := rep.Packages[0], rep.Packages[1]
	if a.Unit != "m/a" || a.Name != "" || a.Status != testresults.Passed || a.Duration != 500*time.Millisecond || a.Output != "ok  \tm/a\t0.5s\n" {
		t.Errorf("m/a: got %+v", a)
	}
	if b.Unit != "m/b" || b.Status != testresults.Failed || b.Duration != 1250*time.Millisecond || b.Output != "want 2\nFAIL\tm/b\t1.25s\n" {
		t.Errorf("m/b: got %+v, want failed in 1.25s with its test's output and its own", b)
	}
	equalBriefs(t, rep.Cases, []brief{
		{"m/b", "TestB", testresults.Failed, "failed"},
		{"m/c", "", testresults.Failed, "package did not finish"},
	})
}

// Plain go test output, or a line of braces, is not go test -json.
func TestReadGoTestJSONNotFound(t *testing.T) {
	rep, err := testresults.ReadGoTestJSON(strings.NewReader("ok  \terrors\t0.1s\n{not json}\n--- FAIL: TestX\n"))
	if err != nil || rep.Found() {
		t.Errorf("got %+v, %v; want nothing found", rep, err)
	}
}
