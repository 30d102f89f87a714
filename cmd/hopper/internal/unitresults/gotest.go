package unitresults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// goTestEvent is one line of `go test -json` (test2json).
type goTestEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// GoTestJSON reads the output of `go test -json` over units. found is
// false when out holds no test2json event at all (the command is
// something else). A unit counts as reported once its package's final
// event (pass, skip or fail, without a test name) is seen.
func GoTestJSON(out []byte, units []string) (reported map[string]Unit, found bool) {
	reported = map[string]Unit{}
	outputs := map[string]*bytes.Buffer{}
	failed := map[string][]Failure{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		var ev goTestEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Action == "" || ev.Package == "" {
			continue
		}
		found = true
		unit, ok := Match(ev.Package, units)
		if !ok {
			continue
		}
		if outputs[unit] == nil {
			outputs[unit] = &bytes.Buffer{}
		}
		outputs[unit].WriteString(ev.Output)
		switch {
		case ev.Test != "" && ev.Action == "fail":
			failed[unit] = append(failed[unit], Failure{Name: ev.Test})
		case ev.Test == "" && (ev.Action == "pass" || ev.Action == "skip" || ev.Action == "fail"):
			u := Unit{Passed: ev.Action != "fail", Duration: time.Duration(ev.Elapsed * float64(time.Second))}
			if !u.Passed {
				u.Failures = failed[unit]
				if len(u.Failures) == 0 {
					u.Failures = []Failure{{Name: ev.Package, Message: strings.TrimSpace(lastLines(outputs[unit].String(), 20))}}
				}
			}
			reported[unit] = u
		}
	}
	for unit, u := range reported {
		u.Output = outputs[unit].Bytes()
		reported[unit] = u
	}
	return reported, found
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
