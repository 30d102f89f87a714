package report_test

import (
	"encoding/xml"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/report"
)

// refusedBy appends the worker_error a refused join records.
func (b *logBuilder) refusedBy(worker, phase, class, message string) *logBuilder {
	b.t.Helper()
	return b.add(workerError{events.WorkerError{WorkerID: worker, Phase: phase, Class: class, Message: message}, b.at})
}

// workerError stamps at_ms on a WorkerError as AppendPrebuilt does.
type workerError struct {
	e  events.WorkerError
	at int64
}

func (w workerError) Encode() ([]byte, error) {
	raw, err := w.e.Encode()
	if err != nil {
		return nil, err
	}
	return events.StampPrebuilt(raw, w.at)
}

// A build a worker refused to join is never passed, whatever its units
// did: infrastructure, exit 2, naming the differing inputs.
func TestJudgeRefusedJoin(t *testing.T) {
	const mismatch = "queue: build b1: fingerprint mismatch: this worker aaa, published bbb (differing inputs: command, unit_ids)"
	units := []string{"a"}
	for _, tc := range []struct {
		name string
		log  *logBuilder
	}{
		{"passed units", newLog(t).delivered("a", "w1").passed("a", "w1", 1).refusedBy("w2", events.PhaseInit, "queue.ErrFingerprintMismatch", mismatch)},
		{"failed units", newLog(t).delivered("a", "w1").failed("a", "w1", 1).refusedBy("w2", events.PhaseInit, "queue.ErrFingerprintMismatch", mismatch)},
		{"before any unit", newLog(t).refusedBy("w2", events.PhaseInit, "queue.ErrFingerprintMismatch", mismatch).delivered("a", "w1").passed("a", "w1", 1)},
		{"phase fingerprint", newLog(t).delivered("a", "w1").passed("a", "w1", 1).raw(
			`{"type":"worker_error","worker_id":"w2","phase":"fingerprint","unit_id":null,"class":"Mismatch","message":"` + mismatch + `","backtrace":[],"at_ms":5}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := report.Judge(complete(units, 1, tc.log.events()), report.Options{})
			assert.Equal(t, report.VerdictRefused, r.Verdict)
			assert.Equal(t, report.ExitInfrastructure, r.ExitCode)
			assert.Equal(t, "infrastructure: 1 worker refused to join build b1: fingerprint mismatch (differing inputs: command, unit_ids); no verdict, since the units only its suite has were never run", r.Headline)
			assert.Equal(t, []string{"refused: worker w2: " + mismatch}, r.Details)

			raw, err := r.JUnit()
			require.NoError(t, err)
			var doc struct {
				Suites []struct {
					Errors int `xml:"errors,attr"`
				} `xml:"testsuite"`
			}
			require.NoError(t, xml.Unmarshal(raw, &doc))
			assert.Positive(t, doc.Suites[0].Errors, "the JUnit is not greener than the verdict:\n%s", raw)
		})
	}
}

// Other worker errors do not make a refusal.
func TestJudgeOtherWorkerErrorsAreNoRefusal(t *testing.T) {
	evs := newLog(t).delivered("a", "w1").passed("a", "w1", 1).
		refusedBy("w2", events.PhaseRedis, "queue.ErrCorrupt", "meta missing").events()
	r := report.Judge(complete([]string{"a"}, 1, evs), report.Options{})
	assert.Equal(t, report.VerdictPassed, r.Verdict)
}

// A worker's refusal recorded twice, queue's line and then the command's
// with each input's values, is one refusal showing the values; two
// workers read as a plural (issue 43: the headline was garbled).
func TestJudgeRefusalWithValues(t *testing.T) {
	const queueLine = "queue: build b1: fingerprint mismatch: this worker aaa, published bbb (differing inputs: command)"
	const detail = "worker w2 refused build b1: fingerprint mismatch, another suite (differing inputs: command): command: here `go test -race {unit}`, the build's is not recorded in the build's meta (only its digest)"
	evs := newLog(t).delivered("a", "w1").passed("a", "w1", 1).
		refusedBy("w2", events.PhaseInit, "queue.ErrFingerprintMismatch", queueLine).
		refusedBy("w2", events.PhaseInit, "queue.ErrFingerprintMismatch", detail).events()
	r := report.Judge(complete([]string{"a"}, 1, evs), report.Options{})
	assert.Equal(t, "infrastructure: 1 worker refused to join build b1: fingerprint mismatch (differing inputs: command); no verdict, since the units only its suite has were never run", r.Headline)
	assert.Equal(t, []string{"refused: worker w2: " + detail}, r.Details)

	evs = newLog(t).refusedBy("w2", events.PhaseInit, "queue.ErrFingerprintMismatch", queueLine).
		refusedBy("w3", events.PhaseInit, "queue.ErrFingerprintMismatch", queueLine).delivered("a", "w1").passed("a", "w1", 1).events()
	r = report.Judge(complete([]string{"a"}, 1, evs), report.Options{})
	assert.Equal(t, "infrastructure: 2 workers refused to join build b1: fingerprint mismatch (differing inputs: command); no verdict, since the units only their suites have were never run", r.Headline)
}
