package live

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hopper-queue/hopper/report"
)

// Line is the one live line of a terminal: short enough for one row.
func (s Snapshot) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d/%d] %d%%", s.Finalized, s.Total, s.percent())
	if n := len(s.Retrying); n > 0 {
		fmt.Fprintf(&b, "  retrying %d", n)
	}
	if s.Failed > 0 {
		fmt.Fprintf(&b, "  failed %d", s.Failed)
	}
	fmt.Fprintf(&b, "  busy %d/%d  %s", s.ActiveWorkers(), s.Slots(), Duration(s.Elapsed))
	if eta, ok := s.ETA(); ok && !s.Complete() {
		fmt.Fprintf(&b, "  ETA %s", Duration(eta))
	}
	return b.String()
}

// Plain is the progress line printed every few seconds when the output is
// not a terminal.
func (s Snapshot) Plain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "progress: %d of %d units finalized (%d%%), %d retrying, %d failed, %d of %d workers busy, %s elapsed",
		s.Finalized, s.Total, s.percent(), len(s.Retrying), s.Failed, s.ActiveWorkers(), s.Slots(), Duration(s.Elapsed))
	if eta, ok := s.ETA(); ok && !s.Complete() {
		fmt.Fprintf(&b, ", ETA %s", Duration(eta))
	}
	return b.String()
}

func (s Snapshot) percent() int64 {
	if s.Total == 0 {
		return 100
	}
	return s.Finalized * 100 / s.Total
}

// WriteStatus writes the status view of hopper status.
func WriteStatus(w io.Writer, s Snapshot) error {
	var b strings.Builder
	switch {
	case s.Gone:
		fmt.Fprintf(&b, "build %s: gone (it was published; its state expired or was evicted)\n", s.BuildID)
		_, err := io.WriteString(w, b.String())
		return err
	case !s.Published:
		fmt.Fprintf(&b, "build %s: not published yet\n", s.BuildID)
		_, err := io.WriteString(w, b.String())
		return err
	case s.State != "ready":
		fmt.Fprintf(&b, "build %s: %s (see hopper report)\n", s.BuildID, s.State)
		_, err := io.WriteString(w, b.String())
		return err
	}
	state := "running"
	if s.Complete() {
		state = "complete"
	}
	fmt.Fprintf(&b, "build %s: %s, ", s.BuildID, state)
	if s.Round > 1 {
		// The figures are always the latest round's: it is the last of
		// the build's rounds.
		fmt.Fprintf(&b, "round %d of %d, ", s.Round, s.Round)
	}
	fmt.Fprintf(&b, "%d of %d units finalized (%d%%), elapsed %s", s.Finalized, s.Total, s.percent(), Duration(s.Elapsed))
	if eta, ok := s.ETA(); ok && !s.Complete() {
		fmt.Fprintf(&b, ", ETA %s", Duration(eta))
	}
	fmt.Fprintf(&b, "\n  passed %d, failed %d, flaky %d, retrying %d, reclaims %d, abandoned %d\n",
		s.Passed, s.Failed, s.Flaky, len(s.Retrying), s.Reclaims, s.Abandoned)
	for _, f := range s.FailedUnits {
		fmt.Fprintf(&b, "  failed: %s (%s, worker %s)\n", f.UnitID, orDash(f.Reason), f.WorkerID)
	}
	for _, r := range s.Retrying {
		fmt.Fprintf(&b, "  retrying: %s (retry %d)\n", r.UnitID, r.RetryIndex)
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tLAST SEEN\tCURRENT UNIT\tPROCESSED")
	for _, wk := range s.Workers {
		fmt.Fprintf(tw, "%s\t%s ago\t%s\t%d\n", wk.ID, Duration(wk.LastSeen), orDash(wk.CurrentUnit), wk.Processed)
	}
	if len(s.Workers) == 0 {
		fmt.Fprintln(tw, "(none yet)\t\t\t")
	}
	_ = tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Duration prints d for people: 0.4s, 12s, 1m02s, 1h03m.
func Duration(d time.Duration) string { return report.FormatDuration(d) }
