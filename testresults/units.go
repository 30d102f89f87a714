package testresults

import (
	"path"
	"strings"
)

// Assign gives each case to one of the units a command ran. With one unit,
// every case is that unit's: whatever the command calls it, it ran nothing
// else. With several (a batch), a case goes to the unit its Unit names:
// exactly, else once both are cleaned ("./api/" and "api"), else to the
// unit with the longest path its Unit ends with ("example.com/m/api" for
// "./api"), else to the file unit with the longest path that, without its
// extension and with dots for slashes, is its Unit or begins it (Python's
// classname "tests.test_b.TestB" for "tests/test_b.py"). A JUnit case
// tries its testcase's file, then classname, then its suite's file, then
// name, and goes to the first that names a unit. Cases that match no unit,
// or two equally well, are returned apart.
func Assign(cases []Case, units []string) (byUnit map[string][]Case, unmatched []Case) {
	byUnit = make(map[string][]Case)
	if len(units) == 1 {
		if len(cases) > 0 {
			byUnit[units[0]] = append([]Case(nil), cases...)
		}
		return byUnit, nil
	}
	for _, c := range cases {
		if u, ok := caseUnit(c, units); ok {
			byUnit[u] = append(byUnit[u], c)
		} else {
			unmatched = append(unmatched, c)
		}
	}
	return byUnit, unmatched
}

// caseUnit is the unit of units the first of c's names that names one
// names.
func caseUnit(c Case, units []string) (string, bool) {
	names := c.names
	if names == [4]string{} {
		names[0] = c.Unit
	}
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			continue
		}
		if u, ok := unitOf(name, units); ok {
			return u, true
		}
	}
	return "", false
}

func unitOf(name string, units []string) (string, bool) {
	for _, u := range units {
		if u == name {
			return u, true
		}
	}
	clean := cleanUnit(name)
	for _, u := range units {
		if cleanUnit(u) == clean {
			return u, true
		}
	}
	if u, ok := longestUnit(units, func(cu string) bool { return strings.HasSuffix(clean, "/"+cu) }); ok || u != "" {
		return u, ok
	}
	return longestUnit(units, func(cu string) bool {
		ext := path.Ext(cu)
		dotted := strings.ReplaceAll(strings.TrimSuffix(cu, ext), "/", ".")
		return ext != "" && dotted != "" && (clean == dotted || strings.HasPrefix(clean, dotted+"."))
	})
}

// longestUnit is the unit, of those whose cleaned path matches, with the
// longest such path. ok is false when none matches, or (with the unit
// non-empty) when two match as long.
func longestUnit(units []string, matches func(cleaned string) bool) (unit string, ok bool) {
	longest, n := 0, 0
	for _, u := range units {
		cu := cleanUnit(u)
		if cu == "." || len(cu) < longest || !matches(cu) {
			continue
		}
		if len(cu) > longest {
			longest, n = len(cu), 0
		}
		unit, n = u, n+1
	}
	return unit, n == 1
}

func cleanUnit(s string) string {
	return strings.TrimPrefix(path.Clean(strings.TrimSpace(s)), "./")
}

// Outcome is what a unit's cases say of it: Failed if any failed, Passed
// if any passed, Skipped if all were skipped, and "" for no cases (the
// unit gave no per-test results: only its exit status tells).
func Outcome(cases []Case) Status {
	var passed, skipped bool
	for _, c := range cases {
		switch c.Status {
		case Failed:
			return Failed
		case Passed:
			passed = true
		case Skipped:
			skipped = true
		}
	}
	switch {
	case passed:
		return Passed
	case skipped:
		return Skipped
	}
	return ""
}

// FailedNames lists the names of the failed cases, in order, each once; a
// case of the unit as a whole (empty Name) is listed by its Unit.
func FailedNames(cases []Case) []string {
	var names []string
	seen := make(map[string]bool)
	for _, c := range cases {
		if !c.Failed() {
			continue
		}
		if name := c.Label(); !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}
