package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readDoc reads a file of the repository, its white space collapsed so that
// a phrase matches however the text wraps.
func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", rel))
	require.NoError(t, err)
	return strings.Join(strings.Fields(string(b)), " ")
}

// TestExitCodesAgree: README, docs/cli.md and the help quote the report's
// exit codes as the code gives them (report.ExitCodesText), and the report
// column of docs/cli.md's table lists those codes and no other (issue 43:
// the README gave hopper report a code 4 it never returns).
func TestExitCodesAgree(t *testing.T) {
	want := "(" + report.ExitCodesText() + ")"
	for _, doc := range []string{"README.md", "docs/cli.md"} {
		assert.True(t, strings.Contains(readDoc(t, doc), want), "%s does not quote the report's exit codes %s", doc, want)
	}
	for name, usage := range map[string]string{"run": runUsage, "report": reportUsage} {
		assert.True(t, strings.Contains(strings.Join(strings.Fields(usage), " "), want), "hopper %s --help does not quote %s", name, want)
	}

	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "cli.md"))
	require.NoError(t, err)
	row := regexp.MustCompile(`(?m)^\| (\d) \| [^|]* \| ([^|]*) \|$`)
	var reportCodes []int
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		if !strings.HasPrefix(strings.TrimSpace(m[2]), "—") {
			n, _ := strconv.Atoi(m[1])
			reportCodes = append(reportCodes, n)
		}
	}
	var codes []int
	for _, part := range strings.Split(report.ExitCodesText(), ", ") {
		n, _ := strconv.Atoi(strings.Fields(part)[0])
		codes = append(codes, n)
	}
	assert.True(t, slices.Equal(codes, reportCodes), "docs/cli.md's report column lists codes %v, the report gives %v", reportCodes, codes)
}
