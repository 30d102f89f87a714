package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestReportHelpMatchesJUnit: report --help says what --junit-out writes:
// a case per test when the command reported tests, not one per unit
// (issue 43).
func TestReportHelpMatchesJUnit(t *testing.T) {
	help := strings.Join(strings.Fields(reportUsage), " ")
	assert.NotContains(t, help, "one test case per unit")
	assert.Contains(t, help, "a test case per test when its command reported them")
}
