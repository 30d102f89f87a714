package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
)

// target is the build a command acts on and the Redis it lives in.
type target struct {
	BuildID string
	// Redis is the server's URL; "" when none was given (hopper run then
	// starts the embedded server).
	Redis string
	// redisFrom names where Redis came from: --redis, the variable, or
	// embeddedFrom.
	redisFrom string
	// TLS is how a rediss:// connection checks the server (see tls.go).
	TLS tlsFiles
}

type targetFlags struct {
	build, redis *string
	tls          tlsFlags
	// redisVars are the variables --redis falls back to, in order.
	redisVars []string
}

// sharedRedisVars are the fallbacks of --redis for work, report, status and
// events, which CI points at its Redis. hopper run reads HOPPER_REDIS_URL
// alone (runRedisVars): REDIS_URL is often exported for an application's
// own database, which a local run must not write into.
var (
	sharedRedisVars = []string{"HOPPER_REDIS_URL", "REDIS_URL"}
	runRedisVars    = []string{"HOPPER_REDIS_URL"}
)

func addTargetFlags(f *flagSet) targetFlags {
	return targetFlags{build: f.String("build", ""), redis: f.String("redis", ""), tls: addTLSFlags(f), redisVars: sharedRedisVars}
}

// resolve applies the fallbacks of --build (HOPPER_BUILD_ID, then the CI's
// build id) and --redis (tf.redisVars). A missing build id is an error only
// when needBuild.
func (tf targetFlags) resolve(f *flagSet, env Env, needBuild bool) (target, error) {
	var t target
	var err error
	if t.BuildID, err = tf.buildID(f, env, needBuild); err != nil {
		return t, err
	}
	if t.Redis, t.redisFrom, err = tf.redisURL(f, env); err != nil {
		return t, err
	}
	t.TLS, err = tf.tls.resolve(f, env, t)
	return t, err
}

// buildID is --build, else HOPPER_BUILD_ID, else the CI's build id;
// empty, and no error, when none is given and !needBuild.
func (tf targetFlags) buildID(f *flagSet, env Env, needBuild bool) (string, error) {
	var id string
	switch {
	case f.Given("build"):
		if id = strings.TrimSpace(*tf.build); id == "" {
			return "", usagef("--build must not be empty")
		}
	default:
		id, _ = env.first("HOPPER_BUILD_ID")
		if id == "" {
			if ci, ok := DetectCI(env); ok {
				id = ci.BuildID
				if id == "" && needBuild {
					return "", usagef("no build id: %s is detected but its build id variable is not set; pass --build or set HOPPER_BUILD_ID", ci.Vendor)
				}
			}
		}
	}
	if id == "" {
		if needBuild {
			return "", usagef("no build id: pass --build, set HOPPER_BUILD_ID, or run under CircleCI, Buildkite, GitHub Actions or GitLab CI (%s)", ciBuildNames())
		}
		return "", nil
	}
	if err := checkName("build id", id); err != nil {
		return "", err
	}
	// The build id is the cluster hash tag of every key of the build
	// (hopper:{<build>}:...): a brace would make the tag something else.
	if strings.ContainsAny(id, "{}") {
		return "", usagef("build id %q holds a brace, which would move its keys to another cluster slot", id)
	}
	return id, nil
}

// redisURL is --redis, else the first of tf.redisVars set, with where it
// came from; a URL given is checked.
func (tf targetFlags) redisURL(f *flagSet, env Env) (url, from string, err error) {
	if f.Given("redis") {
		url, from = strings.TrimSpace(*tf.redis), "--redis"
		if url == "" {
			return "", "", usagef("--redis must not be empty")
		}
	} else {
		url, from = env.first(tf.redisVars...)
	}
	if url != "" {
		if _, err := redisOption(url, from); err != nil {
			return "", "", err
		}
	}
	return url, from, nil
}

// embeddedFrom is the redisFrom of hopper run's embedded server.
const embeddedFrom = "embedded"

// redisShown names t's Redis and where it came from, for the first line
// of every command and for its errors: "redis://h:6379 (from REDIS_URL)",
// the password hidden.
func (t target) redisShown() string {
	if t.redisFrom == embeddedFrom {
		return "the embedded server (" + t.Redis + ")"
	}
	return redact(t.Redis) + " (from " + t.redisFrom + ")"
}

// needRedis refuses a target without Redis, for every command but run.
func (t target) needRedis() error {
	if t.Redis == "" {
		return usagef("no Redis: pass --redis redis://HOST:PORT, or set HOPPER_REDIS_URL or REDIS_URL")
	}
	return nil
}

// checkName refuses an id the queue would refuse, with the flag's words.
func checkName(what, id string) error {
	if len(id) > queue.MaxIDBytes {
		return usagef("%s is %d bytes, over %d", what, len(id), queue.MaxIDBytes)
	}
	if strings.ContainsAny(id, "\r\n") {
		return usagef("%s %q has a line break", what, id)
	}
	if !utf8.ValidString(id) {
		return usagef("%s %q is not valid UTF-8", what, id)
	}
	return nil
}

// outputs are the report's files and rules, shared by report, run and
// work --report-on-exit.
type outputs struct {
	SummaryOut, FailedOut, JUnitOut, HTMLOut string
	AllowEmpty                               bool
	MinExamples                              int64
}

type outputFlags struct {
	summary, failed, junit, html, minExamples *string
	allowEmpty                                *bool
}

func addOutputFlags(f *flagSet) outputFlags {
	return outputFlags{
		summary: f.String("summary-out", ""), failed: f.String("failed-out", ""),
		junit: f.String("junit-out", ""), html: f.String("html-out", ""),
		minExamples: f.String("min-examples", "0"), allowEmpty: f.Bool("allow-empty"),
	}
}

func (of outputFlags) resolve(c *checks) outputs {
	o := outputs{SummaryOut: *of.summary, FailedOut: *of.failed, JUnitOut: *of.junit, HTMLOut: *of.html, AllowEmpty: *of.allowEmpty}
	var n int
	c.notNegative(&n, "min-examples", *of.minExamples)
	o.MinExamples = int64(n)
	return o
}

// given names the first output flag on the command line, for work, which
// takes them only with --report-on-exit.
func (of outputFlags) given(f *flagSet) string {
	for _, n := range []string{"summary-out", "failed-out", "junit-out", "html-out", "min-examples", "allow-empty"} {
		if f.Given(n) {
			return n
		}
	}
	return ""
}

func (o outputs) reportOptions() report.Options {
	return report.Options{AllowEmpty: o.AllowEmpty, MinExamples: o.MinExamples}
}

// workOptions are hopper work's, and the worker half of hopper run's.
type workOptions struct {
	target
	WorkerID string
	// Retry is the CI's retry signal, or --retry-failed (see retry.go).
	Retry            queue.RetrySignal
	Revision         string
	UnitType         string
	Timeout          time.Duration
	MaxUnitDuration  time.Duration
	MaxRequeues      int
	RequeueTolerance float64
	MaxReclaims      int
	Processes        int
	TTL              time.Duration
	TombstoneTTL     time.Duration
	InitTimeout      time.Duration
	ReportOnExit     bool
	Outputs          outputs
	// Units are the unit ids from the arguments; UnitsFrom the file
	// (or "-") named by --units-from.
	Units     []string
	UnitsFrom string
	// Command is the template after "--".
	Command  []string
	Progress string
	// Timings is --timings: "" (the default store), "off", or a file.
	Timings string
	// Batch is --batch: units per command (see batch.go); 0 until the
	// command is known, when it is not given.
	Batch int
	// embedded is true on hopper run's embedded server, whose keys go
	// with the process: the suite's timings are then kept in a file.
	embedded bool
	// pollInterval is the wait between looks at a build another slot is
	// publishing, block the longest wait of one look for a unit; zero
	// means the worker's default.
	pollInterval, block time.Duration
	// restartAborted puts a new worker in the slot of one that aborted
	// (hopper run: see runWorkers).
	restartAborted bool
	// goMode runs the units as Go packages (--go; see gomode.go).
	goMode *goMode
}

type workFlags struct {
	target                                                           targetFlags
	worker, revision, unitType, unitsFrom, progress, timings, batch  *string
	timeout, maxUnit, maxRequeues, tolerance, maxReclaims, processes *string
	ttl, tombstoneTTL, initTimeout                                   *string
	reportOnExit, retryFailed, goNative                              *bool
	outputs                                                          outputFlags
}

// addWorkFlags registers the work flags; processesName is "processes" for
// work and "jobs" (alias -j) for run.
func addWorkFlags(f *flagSet, processes string, aliases ...string) workFlags {
	return workFlags{
		target: addTargetFlags(f),
		worker: f.String("worker", ""), revision: f.String("revision", ""),
		unitType: f.String("unit-type", queue.DefaultUnitType), unitsFrom: f.String("units-from", ""),
		progress:     f.String("progress", "auto"),
		timings:      f.String("timings", ""),
		batch:        f.String("batch", "1"),
		timeout:      f.String("timeout", secondsText(worker.DefaultTimeout)),
		maxUnit:      f.String("max-unit-duration", secondsText(worker.DefaultMaxUnitDuration)),
		maxRequeues:  f.String("max-requeues", strconv.Itoa(worker.DefaultMaxRequeues)),
		tolerance:    f.String("requeue-tolerance", strconv.FormatFloat(worker.DefaultRequeueTolerance, 'f', -1, 64)),
		maxReclaims:  f.String("max-reclaims", strconv.Itoa(worker.DefaultMaxReclaims)),
		processes:    f.String(processes, "1", aliases...),
		ttl:          f.String("ttl", secondsText(worker.DefaultTTL)),
		tombstoneTTL: f.String("tombstone-ttl", secondsText(worker.DefaultTombstoneTTL)),
		initTimeout:  f.String("init-timeout", secondsText(worker.DefaultInitTimeout)),
		reportOnExit: f.Bool("report-on-exit"),
		retryFailed:  f.Bool("retry-failed"),
		goNative:     f.Bool("go"),
		outputs:      addOutputFlags(f),
	}
}

func (wf workFlags) resolve(f *flagSet, env Env, processes string, needBuild bool) (workOptions, error) {
	var o workOptions
	var err error
	if o.target, err = wf.target.resolve(f, env, needBuild); err != nil {
		return o, err
	}
	var c checks
	c.seconds(&o.Timeout, "timeout", *wf.timeout)
	c.seconds(&o.MaxUnitDuration, "max-unit-duration", *wf.maxUnit)
	c.budget(&o.MaxRequeues, "max-requeues", *wf.maxRequeues)
	c.fraction(&o.RequeueTolerance, "requeue-tolerance", *wf.tolerance)
	c.budget(&o.MaxReclaims, "max-reclaims", *wf.maxReclaims)
	c.atLeastOne(&o.Processes, processes, *wf.processes)
	c.seconds(&o.TTL, "ttl", *wf.ttl)
	c.seconds(&o.TombstoneTTL, "tombstone-ttl", *wf.tombstoneTTL)
	c.seconds(&o.InitTimeout, "init-timeout", *wf.initTimeout)
	if f.Given("batch") {
		c.atLeastOne(&o.Batch, "batch", *wf.batch)
	}
	o.Outputs = wf.outputs.resolve(&c)
	if c.err != nil {
		return o, c.err
	}
	if o.Timeout < 3*time.Millisecond {
		return o, usagef("--timeout must be at least 0.003 seconds (the heartbeat runs every timeout/3), got %q", *wf.timeout)
	}
	if o.MaxUnitDuration > math.MaxInt64-o.Timeout {
		// The worker aborts a unit at their sum, which must be a duration.
		return o, usagef("--max-unit-duration %q plus --timeout %q is past the longest duration (about 292 years)", *wf.maxUnit, *wf.timeout)
	}
	if hb := worker.HeartbeatInterval(o.Timeout); o.TTL <= o.Timeout+hb {
		// The worker refuses it too (worker.Config); said here in flags.
		return o, usagef("--ttl %q must be longer than --timeout %q plus a heartbeat interval (%v): the build's keys would expire under a worker that rides out an outage", *wf.ttl, *wf.timeout, hb)
	}
	o.ReportOnExit = *wf.reportOnExit
	o.Retry = retrySignal(env, *wf.retryFailed)
	o.Revision, o.UnitType, o.UnitsFrom = *wf.revision, strings.TrimSpace(*wf.unitType), *wf.unitsFrom
	if f.Given("units-from") && o.UnitsFrom == "" {
		return o, usagef("--units-from must name a file, or - for stdin")
	}
	if o.UnitType == "" {
		return o, usagef("--unit-type must not be empty")
	}
	if o.Timings = *wf.timings; f.Given("timings") && o.Timings == "" {
		return o, usagef("--timings must name a file, or off")
	}
	if err := checkName("--unit-type", o.UnitType); err != nil {
		return o, err
	}
	if err := checkName("--revision", o.Revision); err != nil {
		return o, err
	}
	switch o.Progress = *wf.progress; o.Progress {
	case "auto", "live", "plain", "off":
	default:
		return o, usagef("--progress must be auto, live, plain or off, got %q", o.Progress)
	}

	if o.WorkerID, err = wf.workerID(f, env); err != nil {
		return o, err
	}
	return o, o.checkSlotIDs(processes)
}

// workerID is --worker, then HOPPER_WORKER_ID, then the CI's node index,
// then <hostname>-<pid>.
func (wf workFlags) workerID(f *flagSet, env Env) (string, error) {
	var id string
	switch {
	case f.Given("worker"):
		if id = strings.TrimSpace(*wf.worker); id == "" {
			return "", usagef("--worker must not be empty")
		}
	default:
		id, _ = env.first("HOPPER_WORKER_ID")
		if id == "" {
			if ci, ok := DetectCI(env); ok {
				id = ci.WorkerID
			}
		}
		if id == "" {
			id = defaultWorkerID()
		}
	}
	return id, checkName("worker id", id)
}

// checkSlotIDs refuses a worker id whose slots' ids, <id>.1 .. <id>.N, would
// be too long; processes names the flag that gave N.
func (o workOptions) checkSlotIDs(processes string) error {
	if n := o.Processes; n > 1 {
		if longest := len(o.WorkerID) + 1 + len(strconv.Itoa(n)); longest > queue.MaxIDBytes {
			return usagef("worker id is %d bytes: with --%s %d its slot ids (<id>.1 .. <id>.%d) would be up to %d bytes, over %d",
				len(o.WorkerID), processes, n, n, longest, queue.MaxIDBytes)
		}
	}
	return nil
}

// config is one slot's worker configuration.
func (o workOptions) config(workerID string) worker.Config {
	maxReclaims := o.MaxReclaims
	if maxReclaims == 0 {
		maxReclaims = worker.NoReclaims
	}
	return worker.Config{
		BuildID: o.BuildID, WorkerID: workerID,
		Timeout: o.Timeout, MaxUnitDuration: o.MaxUnitDuration,
		MaxRequeues: o.MaxRequeues, RequeueTolerance: o.RequeueTolerance, MaxReclaims: maxReclaims,
		TTL: o.TTL, TombstoneTTL: o.TombstoneTTL, InitTimeout: o.InitTimeout,
		PollInterval: o.pollInterval, Block: o.block, Retry: o.Retry,
	}
}

// slotIDs are the worker ids of the slots: the worker id itself for one,
// <id>.1 .. <id>.N for more.
func slotIDs(workerID string, n int) []string {
	if n <= 1 {
		return []string{workerID}
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = workerID + "." + strconv.Itoa(i+1)
	}
	return ids
}

// readUnits returns the unit ids from the arguments, then from the
// --units-from file (one a line, blank lines skipped, surrounding white
// space trimmed; "-" reads stdin). A unit named twice is refused: the build
// runs each unit once.
func readUnits(args []string, from string, stdin io.Reader) ([]string, error) {
	seen := map[string]string{}
	var units []string
	add := func(u, where string) error {
		if prev, dup := seen[u]; dup {
			return usagef("unit %q is given twice (%s and %s)", u, prev, where)
		}
		if err := checkUnit(u, where); err != nil {
			return err
		}
		seen[u] = where
		units = append(units, u)
		return nil
	}
	for i, a := range args {
		if strings.TrimSpace(a) == "" {
			return nil, usagef("argument %d is an empty unit id", i+1)
		}
		if err := add(a, fmt.Sprintf("argument %d", i+1)); err != nil {
			return nil, err
		}
	}
	if from == "" {
		return units, nil
	}
	var r io.Reader
	name := from
	if from == "-" {
		r, name = stdin, "stdin"
	} else {
		f, err := os.Open(from)
		if err != nil {
			return nil, usagef("cannot read --units-from %s: %v", from, unwrapPath(err))
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		u := strings.TrimSpace(sc.Text())
		if u == "" {
			continue
		}
		if err := add(u, fmt.Sprintf("line %d of %s", n, name)); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		// The scanner stops at a line longer than its buffer: a unit far
		// over the limit, said as checkUnit says it, not as the scanner's
		// "token too long".
		return nil, usagef("unit (line %d of %s) is over %d bytes", n+1, name, queue.MaxIDBytes)
	} else if err != nil {
		return nil, usagef("cannot read --units-from %s: %v", from, unwrapPath(err))
	}
	return units, nil
}

// checkUnit refuses a unit id the queue would refuse, and one that no
// command could be given: the id is an argument of every attempt and its
// HOPPER_UNIT, and neither can hold a NUL byte (a list written by find
// -print0 would otherwise become one unit that fails to start on every
// attempt). The message names the unit once, and where it was given.
func checkUnit(u, where string) error {
	switch {
	case len(u) > queue.MaxIDBytes:
		return usagef("unit (%s) is %d bytes, over %d", where, len(u), queue.MaxIDBytes)
	case strings.ContainsAny(u, "\r\n"):
		return usagef("unit %q (%s) has a line break", u, where)
	case !utf8.ValidString(u):
		return usagef("unit %q (%s) is not valid UTF-8", u, where)
	case strings.IndexByte(u, 0) >= 0:
		return usagef("unit %q (%s) holds a NUL byte, which no command line can carry", u, where)
	}
	return nil
}

// unwrapPath drops the *PathError's repetition of the path.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
