package testresults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// goTestEvent is one line of go test -json (cmd/test2json's TestEvent).
type goTestEvent struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail (Go 1.24 and later)
	Test       string
	Elapsed    float64
	Output     string
}

// goTestRun accumulates one test's (or, with an empty name, one package's)
// events until its terminal action.
type goTestRun struct {
	c      Case
	output strings.Builder
	ended  bool
}

// ParseGoTestJSON reads go test -json output: one Case per test that
// started, in the order the tests started. Package names the unit. Lines
// that are not test2json events (a wrapper's own output, a build error on a
// Go older than 1.24) are skipped, so the command's stdout can be given
// whole; a stream with no events gives no cases and no error. A test that
// never ended is Failed ("did not finish"); a package that failed with no
// test failed gives one Case for the unit as a whole (empty Name), so the
// cases are never greener than the package. The only error is the reader's.
func ParseGoTestJSON(r io.Reader) ([]Case, error) {
	rep, err := ReadGoTestJSON(r)
	return rep.Cases, err
}

// GoTestReport is go test -json output read whole: its tests, and how
// each package ended, which is what a command over several packages (a
// batch, see docs/design.md#batches) says of each unit as a whole.
type GoTestReport struct {
	// Cases are ParseGoTestJSON's.
	Cases []Case
	// Packages holds one Case per package whose own final event (pass,
	// fail or skip, with no test) was read, in the order they ended: Name
	// empty, Duration the package's Elapsed, Output all the package
	// printed, its tests' output included. A package with no tests, or
	// whose tests all passed, is here and not in Cases.
	Packages []Case
}

// Found reports whether the output held any test2json event: when it did
// not, the command was not go test -json (plain go test's "ok" lines
// included).
func (r GoTestReport) Found() bool { return len(r.Cases)+len(r.Packages) > 0 }

// ReadGoTestJSON reads go test -json output as ParseGoTestJSON does, and
// each package's end besides.
func ReadGoTestJSON(r io.Reader) (GoTestReport, error) {
	p := goTestParser{runs: make(map[[2]string]*goTestRun), printed: make(map[string]*strings.Builder)}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		p.line(line)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return GoTestReport{}, fmt.Errorf("testresults: reading go test -json: %w", err)
		}
	}
	return GoTestReport{Cases: p.cases(), Packages: p.packages}, nil
}

type goTestParser struct {
	runs     map[[2]string]*goTestRun // by package and test
	order    [][2]string
	printed  map[string]*strings.Builder // all of a package's output, by package
	packages []Case
}

func (p *goTestParser) line(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var ev goTestEvent
	if json.Unmarshal(line, &ev) != nil || ev.Action == "" {
		return
	}
	if ev.Package == "" && ev.ImportPath != "" {
		// The build of "m/p [m/p.test]": its output explains the package's
		// failure, so it is the package's own.
		ev.Package, _, _ = strings.Cut(ev.ImportPath, " ")
		if ev.Action == "build-fail" {
			ev.Action = "build-output" // the package's own fail event follows
		}
	}
	if ev.Package == "" {
		return
	}
	key := [2]string{ev.Package, ev.Test}
	run, ok := p.runs[key]
	if !ok {
		run = &goTestRun{c: Case{Unit: ev.Package, Suite: ev.Package, Name: ev.Test}}
		p.runs[key] = run
		p.order = append(p.order, key)
	}
	switch ev.Action {
	case "output", "build-output":
		run.output.WriteString(ev.Output)
		p.print(ev.Package, ev.Output)
	case "pass", "fail", "skip", "build-fail":
		run.ended = true
		run.c.Status = goTestStatus(ev.Action)
		run.c.Duration = time.Duration(ev.Elapsed * float64(time.Second))
		if ev.Test == "" {
			end := run.c
			if b := p.printed[ev.Package]; b != nil {
				end.Output = b.String()
			}
			p.packages = append(p.packages, end)
		}
	}
}

// print adds output to all that package printed.
func (p *goTestParser) print(pkg, output string) {
	b, ok := p.printed[pkg]
	if !ok {
		b = &strings.Builder{}
		p.printed[pkg] = b
	}
	b.WriteString(output)
}

func goTestStatus(action string) Status {
	switch action {
	case "pass":
		return Passed
	case "skip":
		return Skipped
	}
	return Failed
}

func (p *goTestParser) cases() []Case {
	var cases []Case
	failedIn := make(map[string]bool) // packages with a failed test
	for _, key := range p.order {
		run := p.runs[key]
		if key[1] == "" {
			continue
		}
		c := run.c
		c.Output = run.output.String()
		if !run.ended {
			c.Status, c.Message = Failed, "did not finish"
		} else if c.Status != Passed {
			c.Message = goTestMessage(c.Output, c.Status)
		}
		if c.Failed() {
			failedIn[key[0]] = true
		}
		cases = append(cases, c)
	}
	for _, key := range p.order {
		run := p.runs[key]
		if key[1] != "" || failedIn[key[0]] || (run.ended && run.c.Status != Failed) {
			continue
		}
		c := run.c
		c.Status, c.Output = Failed, run.output.String()
		c.Message = "package failed outside any test"
		if !run.ended {
			c.Message = "package did not finish"
		}
		cases = append(cases, c)
	}
	return cases
}

// goTestMessage is the panic's line if the test panicked, else the first
// line it printed through the testing package (indented
// "file_test.go:12: ...": t.Error, t.Fatal, t.Skip, or a t.Log before
// them), else the status itself.
func goTestMessage(output string, status Status) string {
	for line := range strings.SplitSeq(output, "\n") {
		if strings.HasPrefix(line, "panic: ") {
			return line
		}
	}
	for line := range strings.SplitSeq(output, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--- ") || strings.HasPrefix(trimmed, "=== ") || trimmed == "" {
			continue
		}
		if strings.HasPrefix(line, "    ") && strings.Contains(trimmed, ".go:") {
			return trimmed
		}
	}
	return string(status)
}
