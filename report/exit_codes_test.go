package report

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestExitCodesText: the line every document copies lists exactly the
// codes the verdicts give, in order, and so never 4.
func TestExitCodesText(t *testing.T) {
	var given []int
	for _, v := range verdicts {
		if c := v.ExitCode(); !slices.Contains(given, c) {
			given = append(given, c)
		}
	}
	slices.Sort(given)
	var listed []int
	for _, c := range exitCodeWords {
		listed = append(listed, c.code)
	}
	assert.Equal(t, given, listed)
	assert.Equal(t, "0 passed, 1 failed, 2 infrastructure, 3 incomplete", ExitCodesText())
}
