package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"time"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/embedded"
)

// run is `hopper run`: publish, N worker slots and the report in one
// command, on the embedded server unless a Redis is given.
func (a *app) run(args []string) error {
	f := newFlagSet("run")
	wf := addWorkFlags(f, "jobs", "j")
	wf.target.redisVars = runRedisVars
	positional, command, err := f.Parse(args)
	if err != nil {
		return err
	}
	o, err := wf.resolve(f, a.env, "jobs", false)
	if err != nil {
		return err
	}
	if f.Given("report-on-exit") {
		return usagef("--report-on-exit is for hopper work: hopper run always reports")
	}
	if !f.Given("jobs") {
		o.Processes = runtime.NumCPU()
		if err := o.checkSlotIDs("jobs"); err != nil {
			return err
		}
	}
	if o.BuildID == "" {
		o.BuildID = generatedBuildID()
	}
	units, err := a.unitsInput(f, wf, &o, positional, command)
	if err != nil {
		return err
	}
	defer o.goMode.close()
	if o.goMode != nil {
		o.goMode.ahead = true
	}
	a.warn(o)

	opts := o.Outputs.reportOptions()
	if o.Redis == "" {
		srv, err := embedded.Start()
		if err != nil {
			return exitf(exitInfrastructure, "%v", err)
		}
		defer srv.Close()
		o.Redis, o.redisFrom = srv.URL(), embeddedFrom
		o.embedded = true
		// No one else can finish the build: when these workers are done,
		// the report judges at once.
		opts.Timeout, opts.InitTimeout = time.Millisecond, time.Millisecond
	}
	client, err := a.connect(o.target)
	if err != nil {
		return err
	}
	defer client.Close()
	// The slots that lose the race to publish look again soon, and an idle
	// slot's look for a unit gives up soon to see the build complete: on
	// one machine there is no crowd to spare, and the run ends when its
	// last slot sees it.
	o.pollInterval, o.block = 100*time.Millisecond, 100*time.Millisecond
	// And no other machine reclaims what an aborted slot leaves.
	o.restartAborted = true
	fmt.Fprintf(a.s.Stderr, "hopper run: build %s, %d unit(s), %d worker(s), on %s%s\n", o.BuildID, len(units), o.Processes, o.redisShown(), a.redisURLLeft(o.target))
	code := a.runWorkers(client, o, units)
	if a.interrupted() {
		return a.partialReport(client, o, opts)
	}
	if err := slotsFailed(code); err != nil {
		return err
	}
	fmt.Fprintln(a.s.Stdout)
	return exitCode(a.judge(client, o.BuildID, o.Outputs, opts))
}

// redisURLLeft notes, on the embedded server, a REDIS_URL that hopper run
// left alone, so that no one wonders why their Redis stayed empty.
func (a *app) redisURLLeft(t target) string {
	if t.redisFrom != embeddedFrom {
		return ""
	}
	if v, _ := a.env.first("REDIS_URL"); v == "" {
		return ""
	}
	return "; REDIS_URL is not read by hopper run: give --redis or HOPPER_REDIS_URL to run on that Redis"
}

// generatedBuildID names a build of hopper run that was given no id:
// run-<UTC time>-<4 random hex digits>.
func generatedBuildID() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return "run-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}
