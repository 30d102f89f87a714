package cli

import (
	"context"
	"fmt"

	"github.com/hopper-queue/hopper/report"
	"github.com/redis/rueidis"
)

// report is `hopper report`.
func (a *app) report(args []string) error {
	f := newFlagSet("report")
	tf := addTargetFlags(f)
	wait := addWaitFlag(f)
	initTimeout := f.String("init-timeout", secondsText(report.DefaultInitTimeout))
	inactive := f.String("inactive-timeout", secondsText(report.DefaultInactiveTimeout))
	of := addOutputFlags(f)
	t, err := a.parseTarget(f, tf, args)
	if err != nil {
		return err
	}
	var c checks
	var opts report.Options
	wait.resolve(f, &c, &opts.Timeout, a.s.Stderr, a.name)
	c.seconds(&opts.InitTimeout, "init-timeout", *initTimeout)
	c.seconds(&opts.InactiveTimeout, "inactive-timeout", *inactive)
	outs := of.resolve(&c)
	if c.err != nil {
		return c.err
	}
	if err := t.needRedis(); err != nil {
		return err
	}
	opts.AllowEmpty, opts.MinExamples = outs.AllowEmpty, outs.MinExamples
	client, err := a.connect(t)
	if err != nil {
		return err
	}
	a.announce(t)
	defer client.Close()
	return exitCode(a.judge(client, t.BuildID, outs, opts))
}

// judge runs the report, prints it and writes the files asked for; it
// returns the report's exit code, or 2 when a file cannot be written.
func (a *app) judge(client rueidis.Client, buildID string, outs outputs, opts report.Options) int {
	return a.judgeIn(a.ctx, client, buildID, outs, opts)
}

// judgeIn is judge under ctx.
func (a *app) judgeIn(ctx context.Context, client rueidis.Client, buildID string, outs outputs, opts report.Options) int {
	opts.PartOf = goPartOf
	r, err := report.Run(ctx, client, buildID, opts)
	if err != nil {
		if a.interrupted() {
			fmt.Fprintf(a.s.Stderr, "%s: interrupted\n", a.name)
		} else {
			fmt.Fprintf(a.s.Stderr, "%s: %s\n", a.name, redisAdvice(oneLine(err.Error())))
		}
		return exitInfrastructure
	}
	if err := r.WriteConsole(a.s.Stdout); err != nil {
		fmt.Fprintf(a.s.Stderr, "%s: %v\n", a.name, err)
	}
	if r.Err != nil {
		// A read Redis refused is in the verdict in the server's words;
		// what to do about it goes to stderr.
		if msg := oneLine(r.Err.Error()); redisAdvice(msg) != msg {
			fmt.Fprintf(a.s.Stderr, "%s: %s\n", a.name, redisAdvice(msg))
		}
	}
	code := r.ExitCode
	for _, out := range []struct {
		path, what string
		write      func(string) error
	}{
		{outs.SummaryOut, "summary", r.WriteSummary},
		{outs.FailedOut, "failed units", r.WriteFailed},
		{outs.JUnitOut, "JUnit report", r.WriteJUnit},
		{outs.HTMLOut, "HTML report", r.WriteHTML},
	} {
		if out.path == "" {
			continue
		}
		if err := out.write(out.path); err != nil {
			fmt.Fprintf(a.s.Stderr, "%s: cannot write the %s to %s: %s\n", a.name, out.what, out.path, oneLine(err.Error()))
			code = exitInfrastructure
		}
	}
	return code
}
