package gorun

import (
	"fmt"
	"strconv"
	"strings"
)

// defaultTimeout is go test's -timeout when none is given.
const defaultTimeout = "10m0s"

// Args are what follows -- under --go: go test's flags and packages, sorted
// by where they go.
type Args struct {
	// Patterns are the package patterns; ./... when none is given.
	Patterns []string
	// Build are the flags of go list and go test -c, as given.
	Build []string
	// Test are the test binary's flags, as -test.<name>=<value>; -test.run
	// and -test.v are left out: the runner sets them per attempt.
	Test []string
	// Run and Skip are the user's -run and -skip, "" when not given.
	Run, Skip string
	// Verbose is -v: every test's output is printed, not only a failed
	// one's.
	Verbose bool
	// FailFast is -failfast: the tests after a failure do not run, so a
	// retry of only the failed ones would leave them out.
	FailFast bool
	// Cover is -cover (or -covermode, -coverpkg).
	Cover bool
	// Bench is -bench: benchmarks run whatever -test.run says, so every
	// shard would run them all.
	Bench bool
	// ldflags is the user's -ldflags, "" when not given.
	ldflags string
}

// omitDebug is what go test adds to the linker's flags of a binary it
// runs and deletes (go test -c does not): no symbol table, no DWARF, which
// halves the link of a test binary. Tracebacks do not need them.
const omitDebug = "-s -w"

// UsageError is a mistake in the arguments after --; the message names
// the flag or value.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// ParseArgs reads the arguments after -- as go test would, refusing the
// flags that make no sense here (naming them and why) and those it does
// not know.
func ParseArgs(args []string) (Args, error) {
	var a Args
	timeout := defaultTimeout
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			a.Patterns = append(a.Patterns, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		f, ok := goTestFlags[name]
		switch {
		case strings.HasPrefix(arg, "---") || name == "":
			return Args{}, usagef("go test flag %q is malformed", arg)
		case strings.HasPrefix(name, "test."):
			return Args{}, usagef("go test flag %s: give it as go test takes it, -%s", arg, strings.TrimPrefix(name, "test."))
		case !ok:
			return Args{}, usagef("unknown go test flag %s", arg)
		case f.kind == refusedFlag:
			return Args{}, usagef("go test flag -%s is not taken with --go: %s", name, f.why)
		}
		if !hasValue && !f.boolean {
			if i+1 >= len(args) {
				return Args{}, usagef("go test flag -%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if f.boolean {
			v, err := boolValue(name, value, hasValue)
			if err != nil {
				return Args{}, err
			}
			value = strconv.FormatBool(v)
		}
		if err := a.add(name, value, f.kind, &timeout); err != nil {
			return Args{}, err
		}
	}
	a.Test = append(a.Test, "-test.timeout="+timeout)
	a.Build = append(a.Build, "-ldflags="+strings.TrimSpace(a.ldflags+" "+omitDebug))
	if len(a.Patterns) == 0 {
		a.Patterns = []string{"./..."}
	}
	return a, nil
}

// add files one flag's value under its kind.
func (a *Args) add(name, value string, kind flagKind, timeout *string) error {
	switch kind {
	case ignoredFlag:
		return nil
	case buildFlag:
		if name == "ldflags" {
			a.ldflags = value // the last one counts, as for go test
			return nil
		}
		a.Build = append(a.Build, "-"+name+"="+value)
		if name == "cover" && value == "true" || name == "covermode" || name == "coverpkg" {
			a.Cover = true
		}
		return nil
	}
	switch name {
	case "v":
		a.Verbose = value == "true"
	case "run":
		a.Run = value
	case "skip":
		a.Skip = value
		a.Test = append(a.Test, "-test.skip="+value)
	case "timeout":
		*timeout = value
	case "count", "parallel":
		if n, err := strconv.Atoi(value); err != nil || n < 1 {
			return usagef("go test flag -%s must be a whole number, at least 1, got %q", name, value)
		}
		a.Test = append(a.Test, "-test."+name+"="+value)
	case "bench":
		a.Bench = value != ""
		a.Test = append(a.Test, "-test.bench="+value)
	case "failfast":
		a.FailFast = value == "true"
		a.Test = append(a.Test, "-test.failfast="+value)
	default:
		a.Test = append(a.Test, "-test."+name+"="+value)
	}
	return nil
}

// boolValue reads a switch: -v, or -v=true / -v=false.
func boolValue(name, value string, given bool) (bool, error) {
	if !given {
		return true, nil
	}
	v, err := strconv.ParseBool(value)
	if err != nil {
		return false, usagef("go test flag -%s takes no value, or true or false; got %q", name, value)
	}
	return v, nil
}

// Command is the flags in canonical form, for the suite's fingerprint,
// whose units are the packages: two workers given the same packages and
// flags, in any spelling, give the same command.
func (a Args) Command() []string {
	words := []string{"go", "test"}
	words = append(words, a.Build...)
	words = append(words, a.Test...)
	if a.Run != "" {
		words = append(words, "-test.run="+a.Run)
	}
	if a.Verbose {
		words = append(words, "-v")
	}
	return words
}
