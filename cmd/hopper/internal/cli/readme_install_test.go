package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeInstallWorksFromACheckout: every go install the README gives as
// a command installs from the checkout, the install section's first
// command among them, and make install exists to do the same (issue 43:
// the @latest line failed, no version being published, and make hopper
// left hopper off PATH).
func TestReadmeInstallWorksFromACheckout(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "README.md"))
	require.NoError(t, err)
	readme := string(raw)
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme, -1)
	var installs []string
	for _, b := range blocks {
		for _, line := range strings.Split(b[1], "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "go install") {
				installs = append(installs, strings.TrimSpace(line))
			}
		}
	}
	require.NotEmpty(t, installs, "the README gives no go install command")
	for _, line := range installs {
		assert.True(t, strings.HasPrefix(line, "go install ./cmd/hopper"), "README command %q does not install from the checkout", line)
	}
	section := readme[strings.Index(readme, "## Install"):]
	first := regexp.MustCompile("(?s)```sh\n(.*?)\n").FindStringSubmatch(section)
	require.NotNil(t, first)
	assert.True(t, strings.HasPrefix(first[1], "go install ./cmd/hopper"), "the install section starts with %q", first[1])

	mk, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "Makefile"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^install:\n\t\$\(GO\) install \./cmd/hopper$`, string(mk))
}
