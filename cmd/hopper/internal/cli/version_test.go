package cli

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVersionCommand: `hopper version` and `hopper --version` print the
// build's version line and exit 0 (issue 43: --version was an unknown
// command).
func TestVersionCommand(t *testing.T) {
	want := versionLine(debug.ReadBuildInfo())
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errs := runMain(Env{}, args...)
		assert.Equal(t, 0, code, args)
		assert.Equal(t, want, out, args)
		assert.Empty(t, errs, args)
	}
	assert.True(t, strings.HasPrefix(want, "hopper "), want)
	code, _, errs := runMain(Env{}, "version", "extra")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `unexpected argument "extra"`)
}

func TestVersionLine(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/hopper-queue/hopper", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "dc86414aabbccddeeff00112233445566778899aa"}, {Key: "vcs.modified", Value: "true"}}}
	assert.Equal(t, "hopper v0.3.0, revision dc86414aabbc (modified), go1.26.8\n", versionLine(info, true))
	info = &debug.BuildInfo{GoVersion: "go1.26.8"}
	assert.Equal(t, "hopper (devel), go1.26.8\n", versionLine(info, true))
	assert.Equal(t, "hopper (no build information)\n", versionLine(nil, false))
}
