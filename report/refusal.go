package report

import (
	"fmt"
	"strings"
)

// Refusal is a worker that refused to join the build: it computed another
// suite (a fingerprint mismatch), so the units only its suite has were
// never run, and the build's verdict would be given for a suite it never
// ran.
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

// Refusals returns the workers that refused to join, in the order of their
// first refusal: the worker_error events of class
// queue.ErrFingerprintMismatch, or phase "fingerprint". A worker that
// recorded its refusal twice (queue's line, then the command's, which
// gives each input's values) counts once, with its last message.
func (l *Log) Refusals() []Refusal {
	out := []Refusal{}
	at := map[string]int{}
	for _, e := range l.WorkerErrors() {
		if e.Class != fingerprintClass && e.Phase != phaseFingerprint {
			continue
		}
		if i, seen := at[e.WorkerID]; seen {
			out[i].Message = e.Message
			continue
		}
		at[e.WorkerID] = len(out)
		out = append(out, Refusal{WorkerID: e.WorkerID, Message: e.Message})
	}
	return out
}

// refusedHeadline names the first refusal's differing inputs in a
// sentence; the details give every refusal in full.
func refusedHeadline(id string, refusals []Refusal) (string, []string) {
	which := "inputs unknown"
	if _, after, ok := strings.Cut(refusals[0].Message, "differing inputs: "); ok {
		names, _, _ := strings.Cut(after, ")")
		which = "differing inputs: " + names
	}
	who, whose := "1 worker", "its suite has"
	if n := len(refusals); n > 1 {
		who, whose = fmt.Sprintf("%d workers", n), "their suites have"
	}
	head := fmt.Sprintf("infrastructure: %s refused to join build %s: fingerprint mismatch (%s); no verdict, since the units only %s were never run",
		who, id, which, whose)
	lines := make([]string, 0, len(refusals))
	for _, r := range refusals {
		lines = append(lines, fmt.Sprintf("refused: worker %s: %s", r.WorkerID, r.Message))
	}
	return head, lines
}
