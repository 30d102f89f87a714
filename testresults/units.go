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
// "./api"). Cases that match no unit, or two equally well, are returned
// apart.
func Assign(cases []Case, units []string) (byUnit map[string][]Case, unmatched []Case) {
	byUnit = make(map[string][]Case)
	if len(units) == 1 {
		if len(cases) > 0 {
			byUnit[units[0]] = append([]Case(nil), cases...)
		}
		return byUnit, nil
	}
	for _, c := range cases {
		if u, ok := unitOf(c.Unit, units); ok {
			byUnit[u] = append(byUnit[u], c)
		} else {
			unmatched = append(unmatched, c)
		}
	}
	return byUnit, unmatched
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
	found, longest, n := "", 0, 0
	for _, u := range units {
		cu := cleanUnit(u)
		if cu == "." || !strings.HasSuffix(clean, "/"+cu) || len(cu) < longest {
			continue
		}
		if len(cu) > longest {
			longest, n = len(cu), 0
		}
		found, n = u, n+1
	}
	return found, n == 1
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
