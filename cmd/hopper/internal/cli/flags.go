package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// usageError is a mistake on the command line: the command prints it with a
// pointer to --help and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errHelp: --help was asked for; the usage goes to stdout and the exit code
// is 0.
var errHelp = errors.New("help requested")

// flagSet is a command's flags. Values are kept as the user wrote them; the
// command then applies environment fallbacks and checks each value with the
// messages below, which name the flag and the bad value.
type flagSet struct {
	fs    *flag.FlagSet
	names map[string]string // every name and alias -> canonical name
	set   map[string]bool   // canonical names given on the command line
}

func newFlagSet(cmd string) *flagSet {
	fs := flag.NewFlagSet("hopper "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{fs: fs, names: map[string]string{}, set: map[string]bool{}}
}

// String registers a flag with a value; aliases share it (-j for --jobs).
func (f *flagSet) String(name, def string, aliases ...string) *string {
	p := new(string)
	*p = def
	for _, n := range append([]string{name}, aliases...) {
		f.fs.Func(n, "", func(v string) error { *p = v; f.set[name] = true; return nil })
		f.names[n] = name
	}
	return p
}

// Bool registers a switch: --name, --name=true or --name=false. Aliases
// share it and read its value the same way (-f=false is --follow=false).
func (f *flagSet) Bool(name string, aliases ...string) *bool {
	p := new(bool)
	for _, n := range append([]string{name}, aliases...) {
		f.fs.BoolFunc(n, "", func(v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("--%s takes no value, or true or false; got %q", name, v)
			}
			*p = b
			f.set[name] = true
			return nil
		})
	}
	// Only the name is listed: a switch's alias takes no value after a
	// space, so -fx is not to be read as -f x (see explain).
	f.names[name] = name
	return p
}

// Given reports whether the flag was on the command line.
func (f *flagSet) Given(name string) bool { return f.set[name] }

// Parse reads args: flags and positional arguments in any order until a
// lone "--", and the command after it (nil when there is no "--").
func (f *flagSet) Parse(args []string) (positional, command []string, err error) {
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], append([]string{}, args[i+1:]...)
			if command == nil {
				command = []string{}
			}
			break
		}
	}
	for {
		if err := f.fs.Parse(args); err != nil {
			return nil, nil, f.explain(err, f.badArg(args))
		}
		rest := f.fs.Args()
		if len(rest) == 0 {
			return positional, command, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// badArg is the argument of args the flag package stopped at: it moves
// past a flag before it looks the flag up or reads its value, so the one
// just before what it left is the culprit. "" when there is none.
func (f *flagSet) badArg(args []string) string {
	i := len(args) - len(f.fs.Args()) - 1
	if i < 0 || i >= len(args) {
		return ""
	}
	return args[i]
}

// explain turns the flag package's errors into this command's words. arg
// is the argument the flag package stopped at: the flag is named as the
// user wrote it (the flag package drops its dashes), so that -j4 is not
// reported as an unknown --j4.
func (f *flagSet) explain(err error, arg string) error {
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	msg := err.Error()
	for _, p := range []struct{ prefix, format string }{
		{"flag provided but not defined: -", "unknown flag %s"},
		{"flag needs an argument: -", "%s needs a value"},
	} {
		if name, ok := strings.CutPrefix(msg, p.prefix); ok {
			name = strings.TrimPrefix(name, "-")
			typed, _, _ := strings.Cut(arg, "=")
			if strings.TrimLeft(typed, "-") != name || !strings.HasPrefix(typed, "-") || strings.HasPrefix(typed, "---") {
				typed = "--" + name
			}
			e := usagef(p.format, typed)
			if len(name) > 1 && typed == "-"+name && f.names[name[:1]] != "" {
				// -j4: a value glued to a short flag, as make takes it.
				e = usagef("unknown flag %s: put the value after a space, -%s %s", typed, name[:1], name[1:])
			}
			return e
		}
	}
	if _, detail, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "invalid") {
		// A Bool's own message, after the flag package's "invalid boolean
		// value ... for -x: ".
		if i := strings.LastIndex(detail, ": "); i >= 0 {
			detail = detail[i+2:]
		}
		return usageError{detail}
	}
	return usageError{msg}
}

// The checks of numeric flags (docs/cli.md#refused-input): each kind has
// its own message, which names the flag and quotes the value.

// positiveSeconds reads a duration given in seconds ("180", "0.5") or as a
// Go duration ("3m", "1500ms"); it must be more than zero, and at least a
// millisecond: Redis keeps TTLs and the workers keep time in milliseconds,
// so a shorter one would be refused later, after connecting.
func positiveSeconds(name, raw string) (time.Duration, error) {
	d, ok := parseSeconds(raw)
	if !ok || d <= 0 {
		return 0, usagef("--%s must be a positive number of seconds, got %q", name, raw)
	}
	if d < time.Millisecond {
		return 0, usagef("--%s must be at least 0.001 seconds (1ms), got %q", name, raw)
	}
	return d, nil
}

func parseSeconds(raw string) (time.Duration, bool) {
	s := strings.TrimSpace(raw)
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > float64(math.MaxInt64/int64(time.Second)) {
			return 0, false
		}
		return time.Duration(v * float64(time.Second)), true
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, true
	}
	return 0, false
}

// secondsText writes a default duration as a flag takes it: 180, 0.5.
func secondsText(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// notNegative reads a whole number that may be zero.
func notNegative(name, raw string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || n < 0 {
		return 0, usagef("--%s must be a whole number, not negative, got %q", name, raw)
	}
	return n, nil
}

// atLeastOne reads a whole number of at least 1.
func atLeastOne(name, raw string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || n < 1 {
		return 0, usagef("--%s must be a whole number, at least 1, got %q", name, raw)
	}
	return n, nil
}

// fraction reads a number between 0 and 1, both included.
func fraction(name, raw string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
		return 0, usagef("--%s must be a number between 0 and 1, got %q", name, raw)
	}
	return v, nil
}

// checks runs value checks in order and keeps the first error.
type checks struct{ err error }

func (c *checks) seconds(dst *time.Duration, name, raw string) {
	if c.err == nil {
		*dst, c.err = positiveSeconds(name, raw)
	}
}

func (c *checks) notNegative(dst *int, name, raw string) {
	if c.err == nil {
		*dst, c.err = notNegative(name, raw)
	}
}

// budget reads a retry or reclaim budget: not negative, and at most
// MaxInt32, the most the build's meta holds (the queue refuses more when it
// publishes, which would be after connecting, and in its own words).
func (c *checks) budget(dst *int, name, raw string) {
	c.notNegative(dst, name, raw)
	if c.err == nil && *dst > math.MaxInt32 {
		c.err = usagef("--%s must be at most %d, got %q", name, math.MaxInt32, raw)
	}
}

func (c *checks) atLeastOne(dst *int, name, raw string) {
	if c.err == nil {
		*dst, c.err = atLeastOne(name, raw)
	}
}

func (c *checks) fraction(dst *float64, name, raw string) {
	if c.err == nil {
		*dst, c.err = fraction(name, raw)
	}
}

func (c *checks) add(err error) {
	if c.err == nil {
		c.err = err
	}
}
