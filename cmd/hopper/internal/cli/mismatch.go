package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/fingerprint"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
)

// explainMismatch turns a slot's refusal of the build (a fingerprint
// mismatch, which names the differing inputs alone) into one line that
// gives each input's value here and in the build, read from the build's
// meta, and records that line in the build's log for the report. ok is
// false for any other error. A build whose publisher did not record its
// command (an older one, or a command too long to keep) holds only the
// command's digest: the line says so.
func (a *app) explainMismatch(client rueidis.Client, buildID, workerID string, suite worker.Suite, err error) (string, bool) {
	var fm *queue.FingerprintMismatchError
	if !errors.As(err, &fm) {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), 5*time.Second)
	defer cancel()
	b, oerr := queue.Open(client, buildID, queue.Options{})
	if oerr != nil {
		return "", false
	}
	st, serr := b.Status(ctx)
	if serr != nil || !st.Published {
		return "", false
	}
	here := fingerprint.Inputs{UnitIDs: suite.Units, UnitType: suite.UnitType, Command: suite.Command, Revision: suite.Revision}
	there := fingerprint.Inputs{UnitIDs: st.Manifest.UnitIDs, UnitType: st.Manifest.UnitType, Command: st.Manifest.Command, Revision: st.Manifest.Revision}
	msg := fmt.Sprintf("worker %s refused build %s: fingerprint mismatch, another suite (differing inputs: %s): %s; every worker of a build must be given the same units, --unit-type, command and --revision",
		workerID, buildID, strings.Join(fm.Inputs, ", "), strings.Join(fingerprint.Explain(fm.Inputs, here, there, there.Command != ""), "; "))
	ev, eerr := events.WorkerError{WorkerID: workerID, Phase: events.PhaseInit, Class: "queue.ErrFingerprintMismatch", Message: msg}.Encode()
	if eerr == nil {
		_ = b.AppendPrebuilt(ctx, workerID, ev) // the line is printed whatever happens to the record
	}
	return msg, true
}
