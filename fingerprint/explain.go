package fingerprint

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// commandWidth bounds a command as Explain shows it: long enough for a
// test command's distinguishing flags, short enough for one line.
const commandWidth = 60

// Explain says, for each input name Diff gave, how the two sides differ:
// "command: here `go test -race {unit}`, the build's `go test {unit}`".
// here is the suite of the worker that refuses, build the published one;
// commandKnown is false when the published command was not recorded
// (its digest alone is), and it is then said so. Commands are shortened
// (ShortCommand); unit lists are compared by count and by the first units
// only one side has. Names Explain does not know are listed as they are.
func Explain(names []string, here, build Inputs, commandKnown bool) []string {
	out := make([]string, 0, len(names))
	for _, name := range names {
		switch name {
		case InputCommand:
			theirs := "is not recorded in the build's meta (only its digest)"
			if commandKnown {
				theirs = "`" + ShortCommand(build.Command) + "`"
			}
			out = append(out, fmt.Sprintf("command: here `%s`, the build's %s", ShortCommand(here.Command), theirs))
		case InputRevision:
			out = append(out, fmt.Sprintf("revision: here %s, the build's %s", orNone(here.Revision), orNone(build.Revision)))
		case InputUnitType:
			out = append(out, fmt.Sprintf("unit type: here %s, the build's %s", orNone(here.UnitType), orNone(build.UnitType)))
		case InputUnitIDs:
			out = append(out, "units: "+unitsDiff(here.UnitIDs, build.UnitIDs))
		default:
			out = append(out, name)
		}
	}
	return out
}

// ShortCommand is cmd on one line, its middle cut out when it is longer
// than commandWidth: the program and the tail (where {unit} and the
// distinguishing flags usually are) are what tell two commands apart.
func ShortCommand(cmd string) string {
	cmd = strings.Join(strings.Fields(cmd), " ")
	if utf8.RuneCountInString(cmd) <= commandWidth {
		return cmd
	}
	r := []rune(cmd)
	head, tail := commandWidth*2/3, commandWidth/3-1
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// unitsDiff compares two unit lists: their sizes, the first units only
// one side has, or that the order alone differs.
func unitsDiff(here, build []string) string {
	onlyHere, onlyBuild := missing(here, build), missing(build, here)
	s := fmt.Sprintf("%d here, %d in the build", len(here), len(build))
	if len(onlyHere) == 0 && len(onlyBuild) == 0 {
		return s + "; the same units in another order"
	}
	if len(onlyHere) > 0 {
		s += "; only here: " + firstFew(onlyHere)
	}
	if len(onlyBuild) > 0 {
		s += "; only in the build: " + firstFew(onlyBuild)
	}
	return s
}

// missing is the units of a that b lacks, in a's order.
func missing(a, b []string) []string {
	inB := make(map[string]bool, len(b))
	for _, u := range b {
		inB[u] = true
	}
	var out []string
	for _, u := range a {
		if !inB[u] {
			out = append(out, u)
		}
	}
	return out
}

func firstFew(units []string) string {
	if len(units) <= 3 {
		return strings.Join(units, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(units[:3], ", "), len(units)-3)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
