package console

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFit(t *testing.T) {
	view := "headline that is long\nsecond\nthird\nfourth\nfifth\n"
	for _, tc := range []struct {
		name       string
		cols, rows int
		want       string
	}{
		{"fits", 80, 24, view},
		{"unknown size", 0, 0, view},
		{"exactly rows-1 lines", 80, 6, view},
		{"too tall", 80, 5, "headline that is long\nsecond\nthird\n... 2 more lines\n"},
		{"too narrow", 9, 0, "headline\nsecond\nthird\nfourth\nfifth\n"},
		{"both", 9, 4, "headline\nsecond\n... 3 mo\n"},
		{"too few rows to cut", 80, 2, view},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Fit(view, tc.cols, tc.rows))
		})
	}
	assert.Equal(t, "ab\u00e9\n", Fit("ab\u00e9\u00e9\u00e9\n", 4, 0), "cut by characters, not bytes")
	assert.Equal(t, "", Fit("", 10, 10))
}
