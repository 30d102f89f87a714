package report

import (
	"fmt"
	"strings"
)

// Refusal is a worker that refused to join the build: it computed another
// suite (a fingerprint mismatch), so units only its suite had never ran,
// and the build's verdict would be given for a suite it never ran.
type Refusal struct {
	WorkerID string `json:"worker_id"`
	// Message is the worker's own, naming the inputs that differ.
	Message string `json:"message"`
}

// fingerprintClass is the class queue's Join records a mismatch with (phase
// init); phaseFingerprint is a phase other writers may use for the same.
const (
	fingerprintClass = "queue.ErrFingerprintMismatch"
	phaseFingerprint = "fingerprint"
)

// Refusals returns the worker_error events that record a refusal to join:
// class queue.ErrFingerprintMismatch, or phase "fingerprint", in log order.
func (l *Log) Refusals() []Refusal {
	out := []Refusal{}
	for _, e := range l.WorkerErrors() {
		if e.Class == fingerprintClass || e.Phase == phaseFingerprint {
			out = append(out, Refusal{WorkerID: e.WorkerID, Message: e.Message})
		}
	}
	return out
}

// refusedHeadline names the first refusal's differing inputs; the details
// give every refusal in full.
func refusedHeadline(id string, refusals []Refusal) (string, []string) {
	first := refusals[0].Message
	which := "inputs unknown"
	if _, after, ok := strings.Cut(first, "differing inputs: "); ok {
		which = "differing inputs: " + strings.TrimSuffix(after, ")")
	}
	head := fmt.Sprintf("infrastructure: %d worker(s) refused to join build %s: fingerprint mismatch (%s); units only their suite has never ran",
		len(refusals), id, which)
	lines := make([]string, 0, len(refusals))
	for _, r := range refusals {
		lines = append(lines, fmt.Sprintf("refused: worker %s: %s", r.WorkerID, r.Message))
	}
	return head, lines
}
