package console

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Fit cuts view, lines each ended by "\n", to a screen of cols columns and
// rows rows, for a view redrawn in place from the screen's top left corner
// (hopper status): a line wider than the screen would wrap, and a view taller
// than it would scroll at every redraw, pushing its first lines, the
// headline, off the screen and a copy of them into the scrollback. It keeps
// at most rows-1 lines, so that the cursor after the last newline is still
// on the screen, the last of them saying how many lines were left out; each
// line is cut to cols-1 characters, as the live line is. A size of 0 is
// unknown: that side is left alone, as is a screen of fewer than 3 rows.
func Fit(view string, cols, rows int) string {
	lines := strings.SplitAfter(view, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if rows >= 3 && len(lines) > rows-1 {
		keep := rows - 2
		lines = append(lines[:keep:keep], fmt.Sprintf("... %d more lines\n", len(lines)-keep))
	}
	if w := cols - 1; w > 0 {
		for i, line := range lines {
			text, nl := strings.CutSuffix(line, "\n")
			if utf8.RuneCountInString(text) > w {
				text = string([]rune(text)[:w])
				if nl {
					text += "\n"
				}
				lines[i] = text
			}
		}
	}
	return strings.Join(lines, "")
}
