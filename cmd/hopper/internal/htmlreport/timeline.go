package htmlreport

import (
	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
)

// The attempts the timeline draws are the report's (report.Attempts), one
// reading of the log for the summary and the page.
type Attempt = report.Attempt

// How an attempt ended, as the timeline colours it.
const (
	EndPassed   = report.EndPassed
	EndFailed   = report.EndFailed
	EndRequeued = report.EndRequeued
	EndLost     = report.EndLost
	EndStale    = report.EndStale
	EndRunning  = report.EndRunning
)

// Attempts is report.Attempts.
func Attempts(log []events.Event) []Attempt { return report.Attempts(log) }
