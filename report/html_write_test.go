package report_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteHTMLFromTheLibrary: a library user writes the HTML report with
// the report package alone, as hopper report --html-out does (issue 43:
// it lived in the command's internal packages).
func TestWriteHTMLFromTheLibrary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "report.html")
	require.NoError(t, failedBuild(t).WriteHTML(path))
	page, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(page), "<!DOCTYPE html>")
	assert.Contains(t, string(page), "b1")
	assert.Contains(t, string(page), "<svg")
}
