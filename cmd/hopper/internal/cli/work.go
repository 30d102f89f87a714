package cli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/attempt"
	"github.com/hopper-queue/hopper/cmd/hopper/internal/console"
	"github.com/hopper-queue/hopper/cmd/hopper/internal/live"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/timings"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
)

// attemptsWait bounds the wait for commands still running when the workers
// returned (an abort, an interrupt) before the process exits.
const attemptsWait = 15 * time.Second

// work is `hopper work`.
func (a *app) work(args []string) error {
	f := newFlagSet("work")
	wf := addWorkFlags(f, "processes")
	positional, command, err := f.Parse(args)
	if err != nil {
		return err
	}
	o, err := wf.resolve(f, a.env, "processes", true)
	if err != nil {
		return err
	}
	if err := o.needRedis(); err != nil {
		return err
	}
	if n := wf.outputs.given(f); n != "" && !o.ReportOnExit {
		return usagef("--%s is for the report: give --report-on-exit too, or use hopper report", n)
	}
	units, err := a.unitsInput(f, wf, &o, positional, command)
	if err != nil {
		return err
	}
	defer o.goMode.close()
	a.warn(o)
	client, err := a.connect(o.target)
	if err != nil {
		return err
	}
	defer client.Close()
	a.announce(o.target)
	code := a.runWorkers(client, o, units)
	if a.interrupted() {
		return exitf(exitInfrastructure, "interrupted: the units that were running go to the other workers once they have been silent for --timeout")
	}
	if !o.ReportOnExit {
		return exitCode(code)
	}
	if err := slotsFailed(code); err != nil {
		return err
	}
	return exitCode(a.judge(client, o.BuildID, o.Outputs, o.Outputs.reportOptions()))
}

// slotsFailed is the end of a command that was to report once its worker
// slots were done, when one of them failed (a fingerprint mismatch, the
// build's state lost, Redis gone): the build's verdict, passed or not,
// would then be given for a suite this process never ran, so there is no
// report and the exit code is 2. nil: the slots did their part (an abort
// included, which the report judges).
func slotsFailed(code int) error {
	if code != exitInfrastructure {
		return nil
	}
	return exitf(exitInfrastructure, "no report: a worker slot failed (above), and the build's verdict would not cover this process's suite")
}

// warn says, before anything runs, what in o is valid but surely not what
// was meant.
func (a *app) warn(o workOptions) {
	if o.MaxRequeues > 0 && o.RequeueTolerance == 0 {
		// The retry budget is frozen when the build is published:
		// ceil(units × tolerance) units may be retried, none at 0.
		fmt.Fprintf(a.s.Stderr, "%s: warning: --max-requeues %d retries no unit while --requeue-tolerance is 0 (the share of units that may be retried); give one too, for example --requeue-tolerance 0.2\n", a.name, o.MaxRequeues)
	}
}

// suiteInput checks the command and reads the units, for work and run.
func (a *app) suiteInput(o *workOptions, positional, command []string) ([]string, error) {
	switch {
	case command == nil:
		return nil, usagef("no command: put it after --, e.g. -- bundle exec rspec {unit}")
	case len(command) == 0:
		return nil, usagef("no command after --")
	}
	o.Command = command
	if err := o.checkBatch(); err != nil {
		return nil, err
	}
	if !strings.Contains(command[0], attempt.Placeholder) {
		if _, err := exec.LookPath(command[0]); err != nil {
			return nil, usagef("cannot run %q: %v", command[0], attempt.StartCause(err))
		}
	}
	if len(positional) == 0 && o.UnitsFrom == "" {
		return nil, usagef("no units: name them as arguments before --, or give --units-from FILE")
	}
	o.Units = positional
	return readUnits(positional, o.UnitsFrom, a.s.Stdin)
}

// runWorkers runs o.Processes worker slots on client until the build is
// complete and returns the exit code of docs/cli.md#exit-codes: 2 when any slot
// ended with anything but success or an abort, else 4 when any aborted,
// else 0. With o.restartAborted, a slot whose worker aborted goes on as a
// new worker (<slot id>.r2, .r3, ...): hopper run has no other machine to
// reclaim the overrunning unit and run what is left, and the new worker's
// reclaims are bounded by the build's reclaim budget.
func (a *app) runWorkers(client rueidis.Client, o workOptions, units []string) int {
	cons := a.console(o.Progress)
	suite := worker.Suite{
		Units: units, UnitType: o.UnitType, Revision: o.Revision,
		Command: attempt.Quote(o.Command), Project: workingProject(),
	}
	store, _ := a.timingsStoreFor(o, client, suite.ID(), cons.Err())
	suite.Expected = a.loadTimings(store, units, cons.Err())
	measured := &measurements{}
	if o.goMode != nil {
		suite.Units = o.goMode.units(a.ctx, client, o.BuildID, suite.Expected, o.goSlots(a.env))
		suite.TotalExamples = o.goMode.examples
		o.goMode.start(a.ctx, client, o.BuildID, suite.Expected, measured)
	}
	ids := slotIDs(o.WorkerID, o.Processes)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for restart := 2; ; restart++ {
				cfg := o.config(id)
				cfg.Output, cfg.Log = cons.Out(), cons.Err()
				cfg.Measured = measured.add
				if o.goMode != nil {
					cfg.Measured = o.goMode.measured(measured)
				}
				cfg.Batch, cfg.Slots = o.Batch, o.Processes
				cmd := &attempt.Command{
					Args: o.Command, BuildID: o.BuildID, WorkerID: id, Slot: i + 1,
					Supervisor: a.sup, Header: header(id),
				}
				switch {
				case o.goMode != nil:
					errs[i] = worker.Run(a.ctx, client, suite, cfg, o.goMode.runner.Func(id, i+1, header(id)))
				case o.batched():
					errs[i] = worker.RunBatches(a.ctx, client, suite, cfg, cmd.BatchFunc())
				default:
					errs[i] = worker.Run(a.ctx, client, suite, cfg, cmd.Func())
				}
				next := ids[i] + ".r" + strconv.Itoa(restart)
				if !o.restartAborted || worker.ExitCode(errs[i]) != exitAborted || a.interrupted() || len(next) > queue.MaxIDBytes {
					return
				}
				fmt.Fprintf(cons.Err(), "%s: %s; its slot goes on as worker %s\n", a.name, describe(errs[i]), next)
				id = next
			}
		}()
	}
	stop := a.progress(client, o.BuildID, suite.Expected, cons, o.Progress)
	wg.Wait()
	stop()
	a.recordTimings(store, measured, cons.Err())
	if !a.sup.Wait(attemptsWait) {
		fmt.Fprintf(cons.Err(), "%s: %d command(s) still running after %s; leaving them\n", a.name, a.sup.Running(), attemptsWait)
	}

	seen := map[string]bool{}
	for i, err := range errs {
		if err == nil {
			continue
		}
		if a.interrupted() && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue // the command says it once
		}
		msg, ok := a.explainMismatch(client, o.BuildID, ids[i], suite, err)
		if !ok {
			msg = a.explainAbort(client, o.target, describe(err))
		}
		if !seen[msg] {
			seen[msg] = true
			fmt.Fprintf(cons.Err(), "%s: %s\n", a.name, msg)
		}
	}
	return slotsExitCode(errs)
}

// slotsExitCode is the exit code of worker slots that ended with errs
// (docs/cli.md#exit-codes): 2 when any ended with anything but success or an
// abort, else 4 when any aborted, else 0.
func slotsExitCode(errs []error) int {
	code := exitOK
	for _, err := range errs {
		switch worker.ExitCode(err) {
		case exitOK:
		case exitAborted:
			if code == exitOK {
				code = exitAborted
			}
		default:
			return exitInfrastructure
		}
	}
	return code
}

// describe says why a worker stopped, on one line.
func describe(err error) string {
	var fm *queue.FingerprintMismatchError
	if errors.As(err, &fm) {
		return oneLine(err.Error()) + ": every worker of a build must be given the same units, --unit-type, command and --revision"
	}
	return redisAdvice(oneLine(err.Error()))
}

// header is the line printed before the output of an attempt that counts.
func header(workerID string) func(queue.Reservation, attempt.Outcome) string {
	return func(r queue.Reservation, o attempt.Outcome) string {
		what := "passed"
		if !o.Passed() {
			what = "failed (" + o.Status() + ")"
		}
		n := ""
		if g := r.OwnershipGeneration(); g > 1 {
			n = fmt.Sprintf(", attempt %d", g)
		}
		return fmt.Sprintf("==> %s: %s in %s (worker %s%s)\n", r.UnitID, what, live.Duration(o.Duration), workerID, n)
	}
}

// console shares stdout and stderr between the units' output, the workers'
// lines and the progress line.
func (a *app) console(mode string) *console.Console {
	liveLine := mode == "live" || mode == "auto" && a.s.Terminal && a.env["TERM"] != "dumb"
	return console.New(a.s.Stdout, a.s.Stderr, liveLine, a.s.Width)
}

// Progress intervals: the live line is redrawn often; the plain line is
// printed every few seconds.
const (
	liveInterval  = 500 * time.Millisecond
	plainInterval = 5 * time.Second
)

// progress follows the build on the console until stop is called.
func (a *app) progress(client rueidis.Client, buildID string, expected timings.Table, cons *console.Console, mode string) (stop func()) {
	if mode == "off" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(a.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := live.NewTracker(client, buildID)
		t.Expected = expected
		interval := plainInterval
		if cons.Live() {
			interval = liveInterval
		}
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			s, err := t.Poll(ctx)
			if err != nil || !s.Published {
				continue // not published yet, or Redis trouble the workers report
			}
			if cons.Live() {
				cons.SetLine(s.Line())
			} else {
				cons.Println(s.Plain())
			}
		}
	}()
	return func() {
		cancel()
		<-done
		cons.Done()
	}
}
