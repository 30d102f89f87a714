package gorun

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseArgsSortsFlags(t *testing.T) {
	a, err := ParseArgs([]string{"-short", "-race", "-tags", "integration", "-run=TestA", "--count", "2", "-v", "./x/...", "-timeout", "1m", "./y"})
	require.NoError(t, err)
	assert.Equal(t, []string{"./x/...", "./y"}, a.Patterns)
	assert.Equal(t, []string{"-race=true", "-tags=integration", "-ldflags=-s -w"}, a.Build, "linked as go test links what it runs")
	assert.Equal(t, []string{"-test.short=true", "-test.count=2", "-test.timeout=1m"}, a.Test)
	assert.Equal(t, "TestA", a.Run)
	assert.True(t, a.Verbose)
}

func TestParseArgsDefaults(t *testing.T) {
	a, err := ParseArgs(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"./..."}, a.Patterns)
	assert.Equal(t, []string{"-test.timeout=10m0s"}, a.Test, "go test's default timeout")
}

// Every flag that makes no sense here is refused, naming it, in each
// spelling go test takes.
func TestParseArgsRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"-c"}, {"-o", "x"}, {"-o=x"}, {"-json"}, {"--json"}, {"-exec", "sudo"}, {"-list", "."},
		{"-fuzz", "F"}, {"-coverprofile", "c.out"}, {"-cpuprofile=p"}, {"-args", "x"}, {"-x"}, {"-n"},
	} {
		_, err := ParseArgs(append([]string{"./..."}, args...))
		var ue UsageError
		require.True(t, errors.As(err, &ue), "%v: %v", args, err)
		name, _, _ := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		assert.Contains(t, err.Error(), "-"+name+" is not taken with --go", "%v", args)
	}
}

func TestParseArgsBadInput(t *testing.T) {
	for args, want := range map[string]string{
		"-bogus":       "unknown go test flag -bogus",
		"-test.short":  "give it as go test takes it, -short",
		"-count 0":     `-count must be a whole number, at least 1, got "0"`,
		"-parallel x":  `-parallel must be a whole number, at least 1, got "x"`,
		"-run":         "-run needs a value",
		"-short=maybe": `-short takes no value, or true or false; got "maybe"`,
		"---v":         `flag "---v" is malformed`,
	} {
		_, err := ParseArgs(strings.Fields(args))
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
}

// The user's -ldflags (the last one) keeps its flags, with go test's own
// after them.
func TestParseArgsKeepsLdflags(t *testing.T) {
	a, err := ParseArgs([]string{"-ldflags", "-X m.v=0", "-ldflags=-X m.v=1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"-ldflags=-X m.v=1 -s -w"}, a.Build)
}

// Two spellings of the same flags describe one suite.
func TestCommandIsCanonical(t *testing.T) {
	a, err := ParseArgs([]string{"-short", "-count=1", "./..."})
	require.NoError(t, err)
	b, err := ParseArgs([]string{"--short=true", "-count", "1"})
	require.NoError(t, err)
	assert.Equal(t, a.Command(), b.Command())
	c, err := ParseArgs([]string{"-count", "1"})
	require.NoError(t, err)
	assert.NotEqual(t, a.Command(), c.Command())
}
