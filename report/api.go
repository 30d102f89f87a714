package report

// This file holds the package's fixed vocabulary (exit codes, verdicts,
// defaults, errors); the types and functions live in the files named after
// each idea: queries.go (Log), meta.go, verdict.go (Judge), wait.go (Run),
// console.go, summary.go, junit.go.

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/queue"
)

// Exit codes of a build's report (and of the command that prints it). They
// are the process exit codes CI reads, so their values are fixed.
const (
	// ExitOK: every unit finalized passed.
	ExitOK = 0
	// ExitTestFailure: a unit failed, or the build selected too few examples.
	ExitTestFailure = 1
	// ExitInfrastructure: the build never appeared, Redis could not be read,
	// or the build's state is unreadable.
	ExitInfrastructure = 2
	// ExitIncomplete: the build exists but no verdict can be given: units
	// were never finalized, the state expired, or publishing failed.
	ExitIncomplete = 3
	// ExitAborted: a worker aborted a unit that overran its budget. The
	// report never returns it; it is here so every hopper exit code has one
	// name.
	ExitAborted = 4
)

// exitCodeWords says in a word what each exit code the report returns means,
// in the order of the codes: ExitCodesText builds the one line README,
// docs/cli.md and the command's help copy.
var exitCodeWords = []struct {
	code int
	word string
}{
	{ExitOK, "passed"},
	{ExitTestFailure, "failed"},
	{ExitInfrastructure, "infrastructure"},
	{ExitIncomplete, "incomplete"},
}

// ExitCodesText is the report's exit codes in one line, "0 passed, 1
// failed, ...": every code a verdict gives, and no other (never
// ExitAborted).
func ExitCodesText() string {
	parts := make([]string, len(exitCodeWords))
	for i, c := range exitCodeWords {
		parts[i] = strconv.Itoa(c.code) + " " + c.word
	}
	return strings.Join(parts, ", ")
}

// Verdict is the report's one-word answer, the "verdict" of the JSON summary.
type Verdict string

// Verdicts, with the exit code each one gives (Verdict.ExitCode).
const (
	VerdictPassed      Verdict = "passed"      // ExitOK
	VerdictFailed      Verdict = "failed"      // ExitTestFailure
	VerdictIncomplete  Verdict = "incomplete"  // ExitIncomplete
	VerdictInitFailed  Verdict = "init_failed" // ExitIncomplete
	VerdictExpired     Verdict = "expired"     // ExitIncomplete
	VerdictMissing     Verdict = "missing"     // ExitInfrastructure
	VerdictUnreachable Verdict = "unreachable" // ExitInfrastructure
	VerdictCorrupt     Verdict = "corrupt"     // ExitInfrastructure
	// VerdictRefused: a worker refused to join the build (a fingerprint
	// mismatch): the suite judged is not every worker's. ExitInfrastructure.
	VerdictRefused Verdict = "refused"
)

// verdicts lists every Verdict, for the checks that each has its exit code.
var verdicts = []Verdict{VerdictPassed, VerdictFailed, VerdictIncomplete, VerdictInitFailed,
	VerdictExpired, VerdictMissing, VerdictUnreachable, VerdictCorrupt, VerdictRefused}

// Defaults of Options; the timeouts are also the defaults of the `hopper
// report` flags (docs/cli.md#exit-codes).
const (
	DefaultPollInterval    = time.Second
	DefaultInitTimeout     = queue.DefaultInitTimeout // as long as a joiner waits for the publisher
	DefaultTimeout         = 1080 * time.Second
	DefaultInactiveTimeout = 300 * time.Second
)

// Errors returned by this package, wrapped with the detail; check them with
// errors.Is.
var (
	// ErrInvalidOptions: an Options value was refused; nothing was read.
	ErrInvalidOptions = errors.New("report: invalid options")
	// ErrUnreachable: Redis could not be read. Run reports it as
	// VerdictUnreachable rather than returning it.
	ErrUnreachable = errors.New("report: redis unreachable")
	// ErrCorrupt: the build's keys hold something the report cannot read (a
	// malformed event, a meta field that is not a number). Run reports it as
	// VerdictCorrupt rather than returning it: an unreadable log must never
	// read as green.
	ErrCorrupt = errors.New("report: build state unreadable")
)
