package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/hopper-queue/hopper/report"
	"github.com/redis/rueidis"
)

// partialTimeout bounds the partial report of an interrupted run: a second
// interrupt is not awaited, and Redis may be what stopped the run.
const partialTimeout = 10 * time.Second

// partialReport is what an interrupted hopper run leaves: the report of
// the build as the stop left it (incomplete, its units not run listed as
// never finalized) printed and written to the files asked for, so that a
// CI that cancels the job still gets its JUnit and summary. The exit code
// stays that of an interrupt.
func (a *app) partialReport(client rueidis.Client, o workOptions, opts report.Options) error {
	opts.Interrupted = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), partialTimeout)
	defer cancel()
	fmt.Fprintln(a.s.Stdout)
	a.judgeIn(ctx, client, o.BuildID, o.Outputs, opts)
	return exitf(exitInfrastructure, "interrupted: the report above and the files asked for are partial (units not run are never finalized)")
}
