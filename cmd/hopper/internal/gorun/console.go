package gorun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// event is one line of test2json's output, the fields the console needs.
type event struct {
	Action string
	Test   string
	Output string
}

// consoleText is what go test prints of one package's run, from its
// test2json events: with verbose every line the binary printed; without,
// what go test prints without -v: the output of the tests that failed and
// the package's own lines, framing left out. It ends with go test's line
// for the package: "ok", or "FAIL", with the coverage the binary printed
// (-cover) at its end, as go test puts it.
func consoleText(events []byte, pkg string, passed, verbose bool, d time.Duration) []byte {
	var b bytes.Buffer
	coverage := ""
	byTest := map[string]*bytes.Buffer{}
	var order []string
	failed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(events))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Action == "fail" && ev.Test != "":
			failed[ev.Test] = true
		case ev.Action != "output":
		case ev.Test == "" && strings.HasPrefix(ev.Output, "coverage: "):
			coverage = "\t" + strings.TrimSpace(ev.Output)
		case verbose:
			b.WriteString(ev.Output)
		case ev.Test == "":
			if !isFraming(ev.Output) && ev.Output != "PASS\n" && ev.Output != "FAIL\n" {
				b.WriteString(ev.Output)
			}
		default:
			if byTest[ev.Test] == nil {
				byTest[ev.Test] = &bytes.Buffer{}
				order = append(order, ev.Test)
			}
			if !isFraming(ev.Output) {
				byTest[ev.Test].WriteString(ev.Output)
			}
		}
	}
	if !verbose {
		var tests bytes.Buffer
		for _, t := range order {
			if failed[t] || failed[topLevel(t)] {
				tests.Write(byTest[t].Bytes())
			}
		}
		b = *bytes.NewBuffer(append(tests.Bytes(), b.Bytes()...))
		if !passed {
			b.WriteString("FAIL\n")
		}
	}
	if passed {
		fmt.Fprintf(&b, "ok  \t%s\t%.3fs%s\n", pkg, d.Seconds(), coverage)
	} else {
		if coverage != "" {
			b.WriteString(coverage[1:] + "\n")
		}
		fmt.Fprintf(&b, "FAIL\t%s\t%.3fs\n", pkg, d.Seconds())
	}
	return b.Bytes()
}

// isFraming reports whether line is one of the test framework's lines that
// go test prints only under -v: === RUN, PAUSE, CONT, NAME, and a passing
// or skipped test's --- line.
func isFraming(line string) bool {
	l := strings.TrimLeft(line, " ")
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- SKIP"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// topLevel is the top-level test of a test or subtest name.
func topLevel(name string) string {
	top, _, _ := strings.Cut(name, "/")
	return top
}
