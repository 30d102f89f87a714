// Package unitresults reads what a command run over several units (a
// batch, see docs/design.md#batches) reported of each one: the events of
// `go test -json`, whose Package names the unit, or a JUnit XML file whose
// testcases' file or classname attributes name it. A unit the report does
// not name is not attributed, and never passes by omission: the caller
// runs it again on its own.
//
// The package is pure: bytes in, per-unit outcomes out. These are minimal
// parsers, enough to attribute outcomes and durations to units.
package unitresults

import (
	"strings"
	"time"
)

// Unit is what the command reported of one unit.
type Unit struct {
	Passed bool
	// Duration is the unit's own time as reported; zero when not reported.
	Duration time.Duration
	// Output is the unit's own part of the output, when the report
	// carries it (go test -json); nil otherwise.
	Output []byte
	// Failures name what failed in the unit: tests, or a reason.
	Failures []Failure
}

// Failure is one failed test of a unit.
type Failure struct {
	Name, Message string
}

// Match names the unit of units that a reported name (an import path, a
// file, a class name) belongs to: the unit itself; a path unit ("./a/b",
// "a/b_test.go") that the name ends with at a path boundary (an import
// path "example.com/m/a/b"); or a file unit whose path without extension,
// slashes as dots, is the name (a Python class name "a.b_test"). The
// longest such unit wins. ok is false when none matches.
func Match(name string, units []string) (unit string, ok bool) {
	name = strings.TrimPrefix(name, "./")
	best := -1
	for _, u := range units {
		rel := strings.TrimPrefix(u, "./")
		if rel == "" {
			continue
		}
		dotted := strings.ReplaceAll(strings.TrimSuffix(rel, extension(rel)), "/", ".")
		if rel == name || strings.HasSuffix(name, "/"+rel) || dotted == name || strings.HasPrefix(name, dotted+".") && extension(rel) != "" {
			if len(rel) > best {
				unit, ok, best = u, true, len(rel)
			}
		}
	}
	return unit, ok
}

// extension is the file extension of the last element of path, dot
// included; "" when there is none.
func extension(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[i:]
	}
	return ""
}
