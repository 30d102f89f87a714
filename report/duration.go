package report

import (
	"fmt"
	"time"
)

// FormatDuration writes d as the report's pages and the command's lines
// show it: "4.2s" under ten seconds, "42s", "3m07s", "1h05m". Negative
// durations read as zero.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
