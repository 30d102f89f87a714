// Command suite is `make bench-suite`: a real suite the project does not
// own, packages of the Go standard library under `go test -short`, run
// side by side by `go test -p J` and by `hopper run -j J` cold, again with
// the timings the cold run recorded, and with --batch when hopper has it;
// then by `hopper run --go -j J` (compiled test binaries, no go command
// per package) cold and with its recorded timings, and the ratio of the
// latter's wall time to go test's.
// For each it prints the wall time, the makespan lower bound max(longest
// unit, sum of units ÷ J) from that run's own unit durations, and their
// ratio. It reports numbers and asserts none.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// packages are 48 standard library packages, from a few milliseconds of
// tests to several seconds (time, math/big, encoding/gob ...).
var packages = []string{
	"errors", "container/list", "container/heap", "container/ring", "unicode/utf8", "unicode/utf16",
	"unicode", "sort", "slices", "maps", "path", "html", "hash/crc32", "hash/fnv", "hash/adler32",
	"encoding/hex", "encoding/base64", "encoding/csv", "encoding/binary", "encoding/xml", "encoding/json",
	"encoding/gob", "bufio", "bytes", "strings", "strconv", "fmt", "io", "path/filepath", "regexp/syntax",
	"regexp", "math", "math/bits", "math/rand", "math/big", "crypto/md5", "crypto/sha1", "crypto/sha256",
	"crypto/hmac", "crypto/aes", "compress/flate", "compress/gzip", "archive/tar", "archive/zip",
	"text/tabwriter", "text/template", "net/url", "time",
}

// result is one way of running the suite.
type result struct {
	name  string
	wall  time.Duration
	units map[string]time.Duration // each unit's duration, as that run measured it
	code  int
}

func main() {
	hopper := flag.String("hopper", "bin/hopper", "the hopper binary")
	goTool := flag.String("go", "go", "the go command")
	jobs := flag.Int("j", 2, "parallel slots")
	batch := flag.Int("batch", 4, "--batch of the last run (0: none)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "hopper-bench-suite-")
	check(err)
	defer os.RemoveAll(dir)
	fmt.Printf("bench-suite: %d packages of the Go standard library, go test -short, %d slots; load average %s\n",
		len(packages), *jobs, loadavg())
	fmt.Println("warming the build cache (go test -short -count=1 -run '^$') ...")
	_, _, err = runCmd(exec.Command(*goTool, append([]string{"test", "-short", "-count=1", "-run", "^$"}, packages...)...))
	check(err)

	var results []result
	results = append(results, goTestP(*goTool, *jobs))
	timings := filepath.Join(dir, "timings.json")
	hopperRun := func(name string, extra []string, command ...string) result {
		args := append([]string{"run", "-j", strconv.Itoa(*jobs), "--progress", "off", "--unit-type", "package",
			"--timings", timings, "--summary-out", filepath.Join(dir, "summary.json")}, extra...)
		args = append(append(append(args, packages...), "--", *goTool, "test", "-short", "-count=1"), command...)
		wall, code, err := runCmd(exec.Command(*hopper, args...))
		if err != nil && code < 0 {
			check(err)
		}
		return result{name: name, wall: wall, units: readTimings(timings), code: code}
	}
	results = append(results, hopperRun(fmt.Sprintf("hopper run -j %d, cold", *jobs), nil, "{unit}"))
	results = append(results, hopperRun(fmt.Sprintf("hopper run -j %d, recorded timings", *jobs), nil, "{unit}"))
	if *batch > 0 && hasFlag(*hopper, "--batch") {
		results = append(results, hopperRun(fmt.Sprintf("hopper run -j %d --batch %d, go test -p 1 -json", *jobs, *batch),
			// -p 1: each command runs its packages one at a time, so that
			// the run keeps to its slots as the others do.
			[]string{"--batch", strconv.Itoa(*batch)}, "-p", "1", "-json", "{units}"))
	}
	if hasFlag(*hopper, "--go") {
		goTimings := filepath.Join(dir, "go-timings.json")
		goRun := func(name string) result {
			args := append([]string{"run", "--go", "-j", strconv.Itoa(*jobs), "--progress", "off", "--timings", goTimings,
				"--summary-out", filepath.Join(dir, "summary.json"), "--", "-short"}, packages...)
			wall, code, err := runCmd(exec.Command(*hopper, args...))
			if err != nil && code < 0 {
				check(err)
			}
			return result{name: name, wall: wall, units: readTimings(goTimings), code: code}
		}
		results = append(results, goRun(fmt.Sprintf("hopper run --go -j %d, cold", *jobs)))
		results = append(results, goRun(fmt.Sprintf("hopper run --go -j %d, recorded timings", *jobs)))
	}
	printTable(results, *jobs)
	if last := results[len(results)-1]; strings.Contains(last.name, "--go") {
		fmt.Printf("hopper run --go with recorded timings / go test -p %d: %.2f s / %.2f s = %.3f\n",
			*jobs, last.wall.Seconds(), results[0].wall.Seconds(), last.wall.Seconds()/results[0].wall.Seconds())
	}
	fmt.Printf("load average at the end %s\n", loadavg())
}

// goTestP runs go test -p jobs over the packages, with -json for each
// package's own elapsed time.
func goTestP(goTool string, jobs int) result {
	cmd := exec.Command(goTool, append([]string{"test", "-short", "-count=1", "-p", strconv.Itoa(jobs), "-json"}, packages...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	start := time.Now()
	err := cmd.Run()
	r := result{name: fmt.Sprintf("go test -short -p %d", jobs), wall: time.Since(start), units: map[string]time.Duration{}}
	if err != nil {
		r.code = 1
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Action, Package, Test string
			Elapsed               float64
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail") {
			r.units[ev.Package] = time.Duration(ev.Elapsed * float64(time.Second))
		}
	}
	return r
}

// readTimings reads the unit durations a hopper run recorded, leaving out
// the tests' that --go records beside them (<package>#<test>).
func readTimings(path string) map[string]time.Duration {
	raw, err := os.ReadFile(path)
	check(err)
	var t struct{ Units map[string]float64 }
	check(json.Unmarshal(raw, &t))
	out := map[string]time.Duration{}
	for u, ms := range t.Units {
		if strings.Contains(u, "#") {
			continue
		}
		out[u] = time.Duration(ms * float64(time.Millisecond))
	}
	return out
}

// hasFlag reports whether hopper run's help names flag: an older hopper
// is measured without the runs it cannot do.
func hasFlag(hopper, flag string) bool {
	out, _ := exec.Command(hopper, "run", "--help").CombinedOutput()
	return bytes.Contains(out, []byte(flag))
}

// runCmd runs cmd to the end, its output discarded, and times it.
func runCmd(cmd *exec.Cmd) (time.Duration, int, error) {
	var errs bytes.Buffer
	cmd.Stderr = &errs
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		return wall, ee.ExitCode(), fmt.Errorf("%v: %v\n%s", cmd.Args[:3], err, tail(errs.String()))
	}
	if err != nil {
		return wall, -1, err
	}
	return wall, 0, nil
}

func printTable(results []result, jobs int) {
	w := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "run\twall s\tunits\tsum s\tlongest s\tbound s\twall/bound\texit\t")
	for _, r := range results {
		var sum, longest time.Duration
		for _, d := range r.units {
			sum += d
			longest = max(longest, d)
		}
		bound := max(longest, sum/time.Duration(jobs))
		ratio := 0.0
		if bound > 0 {
			ratio = r.wall.Seconds() / bound.Seconds()
		}
		fmt.Fprintf(w, "%s\t%.2f\t%d\t%.2f\t%.2f\t%.2f\t%.3f\t%d\t\n", r.name, r.wall.Seconds(), len(r.units),
			sum.Seconds(), longest.Seconds(), bound.Seconds(), ratio, r.code)
	}
	w.Flush()
	fmt.Println("bound: max(longest unit, sum of units / slots), from each run's own unit durations (go test's from -json Elapsed, hopper's from its timings)")
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-suite:", err)
		os.Exit(1)
	}
}
