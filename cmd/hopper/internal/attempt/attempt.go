// Package attempt runs one attempt at a unit as a process: the user's
// command with {unit} replaced by the unit id, in a process group of its own,
// its output buffered, and its end turned into a worker.Result.
//
// How an attempt ends decides what the build does with it:
//   - exit status 0: passed;
//   - any other exit status (or a command that cannot start): failed, and
//     the build's retry budget decides whether it is requeued;
//   - terminated by a signal: failed for good (reason test_failure): an
//     interrupted or killed run says nothing about the unit;
//   - the worker stopping or aborting the attempt (its context ending): the
//     whole process group is killed; the result is failed and not requeued.
//
// Nothing here talks to Redis: the worker settles the result.
package attempt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
)

// Placeholder is replaced by the unit id in every argument of the command.
const Placeholder = "{unit}"

// Defaults of Command.
const (
	// DefaultGrace is how long a process group has to exit after it was
	// sent the interrupt, before it is killed.
	DefaultGrace = 10 * time.Second
	// DefaultMaxOutput bounds the output kept per attempt; past it the
	// oldest bytes are dropped (the tail is what explains a failure).
	DefaultMaxOutput = 4 << 20
	// drainWait bounds the wait for the output pipe to close once the
	// process group is gone: a process that left the group (setsid) may
	// still hold it.
	drainWait = 2 * time.Second
)

// Command is how one worker slot runs attempts. The zero value of every
// field but Args means its default. A Command is safe for concurrent use.
type Command struct {
	// Args is the command template: Args[0] is the program, looked up in
	// PATH; every "{unit}" in any argument becomes the unit id. No shell is
	// involved: use `sh -c '...'` for one, the unit id being in $HOPPER_UNIT.
	Args []string
	// BuildID and WorkerID are passed as HOPPER_BUILD_ID and
	// HOPPER_WORKER_ID.
	BuildID, WorkerID string
	// Slot is the worker's slot, 1..N under --processes N: TEST_ENV_NUMBER
	// is "" for slot 1 and "<slot>" otherwise, so that suites can pick a
	// database per slot.
	Slot int
	// Env is the environment the command starts from; default os.Environ().
	Env []string
	// Dir is the working directory; default the current one.
	Dir string
	// Supervisor, when set, tracks the attempt's process group, so that a
	// stop gives it the stop signal and Grace, and Kill ends it at once.
	// Without one (or before Stop), a cancelled attempt is an abort: its
	// group is killed at once.
	Supervisor *Supervisor
	// Grace is how long a stopped attempt's group has after the stop signal
	// before it is killed; default DefaultGrace.
	Grace time.Duration
	// MaxOutput bounds the output kept; default DefaultMaxOutput.
	MaxOutput int
	// Header, when set, writes a line before an attempt's output, as it is
	// printed when the attempt's result counts.
	Header func(r queue.Reservation, res Outcome) string
}

// Outcome is how one attempt ended, for headers and tests.
type Outcome struct {
	// ExitCode is the exit status; -1 when the process did not exit by
	// itself (signal, failed start).
	ExitCode int
	// Signal is the terminating signal, when one killed the process.
	Signal syscall.Signal
	// StartErr is why the command could not start.
	StartErr error
	// Cancelled is true when the worker stopped or aborted the attempt.
	Cancelled bool
	// ReportErr is why the per-unit report of a batch could not be read
	// (a JUnit file that does not parse): the attempt failed, saying so.
	ReportErr error
	Duration  time.Duration
}

// Passed reports whether the attempt passed: it exited 0 by itself.
func (o Outcome) Passed() bool {
	return o.ExitCode == 0 && o.StartErr == nil && o.Signal == 0 && !o.Cancelled && o.ReportErr == nil
}

// Status is the attempt's end in a few words: "exit status 1", "killed by
// signal SIGKILL", "cannot start", "interrupted".
func (o Outcome) Status() string {
	switch {
	case o.Cancelled:
		return "interrupted"
	case o.StartErr != nil:
		return "cannot start"
	case o.Signal != 0:
		return "killed by signal " + signalName(o.Signal)
	case o.ReportErr != nil:
		return "unreadable report"
	}
	return "exit status " + strconv.Itoa(o.ExitCode)
}

// Argv returns the command line of one attempt at unit.
func (c *Command) Argv(unit string) []string {
	argv := make([]string, len(c.Args))
	for i, a := range c.Args {
		argv[i] = strings.ReplaceAll(a, Placeholder, unit)
	}
	return argv
}

// Env returns the environment of one attempt: c.Env (or the process's)
// with the HOPPER_* variables and TEST_ENV_NUMBER set.
func (c *Command) environ(unit string) []string {
	return c.environWith([][2]string{{"HOPPER_UNIT", unit}})
}

// environWith is the environment of an attempt with vars (name, value)
// set, and the HOPPER_* variables of every attempt.
func (c *Command) environWith(vars [][2]string) []string {
	base := c.Env
	if base == nil {
		base = os.Environ()
	}
	vars = append(vars, [][2]string{
		{"HOPPER_BUILD_ID", c.BuildID}, {"HOPPER_WORKER_ID", c.WorkerID}, {"TEST_ENV_NUMBER", TestEnvNumber(c.Slot)},
	}...)
	set := map[string]bool{}
	for _, v := range vars {
		set[v[0]] = true
	}
	env := make([]string, 0, len(base)+len(vars))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !set[k] {
			env = append(env, kv)
		}
	}
	for _, v := range vars {
		env = append(env, v[0]+"="+v[1])
	}
	return env
}

// TestEnvNumber is TEST_ENV_NUMBER of a slot: "" for slot 1 (or none),
// else the slot's number.
func TestEnvNumber(slot int) string {
	if slot <= 1 {
		return ""
	}
	return strconv.Itoa(slot)
}

// Func returns the worker.Func that runs c once per attempt.
func (c *Command) Func() worker.Func {
	return func(ctx context.Context, r queue.Reservation) worker.Result {
		out, o, tests := c.runTests(ctx, c.Argv(r.UnitID), [][2]string{{"HOPPER_UNIT", r.UnitID}})
		return c.testsResult(r, out, o, tests)
	}
}

// Run runs one attempt at unit and returns its buffered output (stdout and
// stderr as they interleaved) and how it ended. It returns once the process
// group is gone, or drainWait after that when something outside the group
// still holds the output.
func (c *Command) Run(ctx context.Context, unit string) ([]byte, Outcome) {
	return c.run(ctx, c.Argv(unit), c.environ(unit))
}

// run runs one attempt of argv under env (see Run).
func (c *Command) run(ctx context.Context, argv, env []string) ([]byte, Outcome) {
	start := time.Now()
	buf := newTail(c.maxOutput())
	o := Outcome{ExitCode: -1}
	if len(argv) == 0 {
		o.StartErr = errors.New("no command")
		return nil, o
	}
	if ctx.Err() != nil {
		o.Cancelled = true
		return nil, o
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		o.StartErr = err
		return nil, o
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = c.Dir
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		o.StartErr = err
		o.Duration = time.Since(start)
		fmt.Fprintf(buf, "hopper: cannot start %s: %v\n", Quote(argv), StartCause(err))
		return buf.Bytes(), o
	}
	pw.Close() // the children hold the write end now
	pgid := cmd.Process.Pid
	done := c.Supervisor.add(pgid)
	defer done()

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(buf, pr)
	}()

	// exited closes when the command has exited; on Linux it is reaped
	// only after its group is killed (see watch).
	exited, reap := watch(cmd)

	select {
	case <-exited:
	case <-ctx.Done():
		o.Cancelled = true
		c.stop(pgid, exited)
		<-exited
	}
	o.Duration = time.Since(start)
	// Whatever the command left running in its group goes with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitErr := reap()
	select {
	case <-drained:
	case <-time.After(drainWait):
		pr.Close()
		<-drained
	}
	pr.Close()
	o.setExit(waitErr)
	return buf.Bytes(), o
}

// setExit records how the command ended, from what reaping it returned: an
// exit code, the signal that killed it, or why it could not be waited for.
func (o *Outcome) setExit(waitErr error) {
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
		o.ExitCode = 0
	case errors.As(waitErr, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			o.Signal = ws.Signal()
		} else {
			o.ExitCode = exitErr.ExitCode()
		}
	default:
		o.StartErr = waitErr
	}
}

// StartCause is why a command could not start, without the program's name,
// which exec's errors repeat ("fork/exec /x: ...", "exec: \"x\": ...") and
// the line saying so already gives.
func StartCause(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		err = ee.Err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err
}

// stop ends a cancelled attempt's process group: at once when the worker
// aborts, after the stop signal and the grace period when it is stopped.
func (c *Command) stop(pgid int, exited <-chan struct{}) {
	if sig, hurry, ok := c.Supervisor.stopping(); ok {
		_ = syscall.Kill(-pgid, sig)
		grace := c.Grace
		if grace <= 0 {
			grace = DefaultGrace
		}
		select {
		case <-exited:
			return
		case <-hurry:
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func (c *Command) maxOutput() int {
	if c.MaxOutput > 0 {
		return c.MaxOutput
	}
	return DefaultMaxOutput
}

// result turns an attempt into what the worker settles.
func (c *Command) result(r queue.Reservation, out []byte, o Outcome) worker.Result {
	res := worker.Result{Outcome: worker.Passed, Duration: o.Duration}
	if !o.Passed() {
		res.Outcome = worker.Failed
		// A signal or a stop says nothing about the unit: never retried.
		res.NoRequeue = o.Signal != 0 || o.Cancelled
		res.Errors = []events.ErrorEntry{ErrorEntry(r.UnitID, c.Argv(r.UnitID), o, out)}
	}
	if c.Header != nil {
		out = append([]byte(c.Header(r, o)), out...)
	}
	res.Output = out
	return res
}

// ErrorEntry describes a failed attempt for the log: example_id the unit,
// description the command line, class the exit status (or signal), message
// the tail of the output, cut to fit events.MaxMessageBytes on a line
// boundary when one is near.
func ErrorEntry(unit string, argv []string, o Outcome, out []byte) events.ErrorEntry {
	msg := ""
	switch {
	case o.StartErr != nil:
		msg = o.StartErr.Error()
	case o.ReportErr != nil:
		msg = o.ReportErr.Error()
	case len(bytes.TrimSpace(out)) == 0:
		msg = "(no output)"
	default:
		msg = Tail(out, events.MaxMessageBytes)
	}
	return events.ErrorEntry{
		ExampleID:   unit,
		Description: Quote(argv),
		Class:       o.Status(),
		Message:     msg,
		Backtrace:   []string{},
	}
}

// Tail returns the end of out in at most limit bytes of valid UTF-8,
// starting at a line when one starts in the last quarter of the room, with
// "..." before it when something was cut, and without trailing blank lines.
func Tail(out []byte, limit int) string {
	s := strings.ToValidUTF8(strings.TrimRight(string(out), " \t\r\n"), "\uFFFD")
	if len(s) <= limit {
		return s
	}
	const mark = "...\n"
	room := limit - len(mark)
	cut := len(s) - room
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	if nl := strings.IndexByte(s[cut:], '\n'); nl >= 0 && nl < room/4 {
		cut += nl + 1
	}
	return mark + s[cut:]
}

// Quote writes argv as a shell would read it back: words with anything but
// safe characters in single quotes, and so are words that, though made of
// safe characters, a shell would not take as written: a brace expansion
// ({a,b}, {1..3}; {unit} alone is literal) or, as the first word, an
// assignment (a=b) instead of the program.
func Quote(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, unsafeInShell) < 0 && !expands(a) && (i > 0 || !strings.Contains(a, "=")) {
			b.WriteString(a)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

// expands reports whether a shell would brace-expand word: a brace with a
// comma or a ".." after it. Erring towards quoting costs nothing.
func expands(word string) bool {
	i := strings.IndexByte(word, '{')
	return i >= 0 && (strings.Contains(word[i:], ",") || strings.Contains(word[i:], ".."))
}

func unsafeInShell(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_./:=+,@%{}", r)
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return fmt.Sprintf("%d (%s)", int(s), s)
}

// tail is a writer that keeps the last max bytes written and counts the
// rest. It compacts only when it holds twice max, so that keeping the tail
// of a long output costs amortized constant time per byte.
type tail struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// Bytes returns the last max bytes, after a note of what was dropped.
func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.buf[max(len(t.buf)-t.max, 0):]
	dropped := t.total - int64(len(kept))
	if dropped == 0 {
		return append([]byte(nil), kept...)
	}
	note := fmt.Sprintf("hopper: the first %d bytes of output were dropped (only the last %d are kept)\n", dropped, len(kept))
	return append([]byte(note), kept...)
}
