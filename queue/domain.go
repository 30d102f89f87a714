package queue

import (
	"github.com/hopper-queue/hopper/queue/internal/engine"
	"github.com/redis/rueidis"
)

// core is the engine's Domain: what package engine needs of the
// transitions, and nothing of where their replies come from. A batch's
// first round trip is planned in batch_reads.go (Trip, AppendTrip,
// SameTrip), decided in batch.go (Decide), and what a settlement carries
// for its worker's next reservation is read_ahead.go's (Carried); the
// rest is here.
var _ engine.Domain[Reservation, batchTrip] = (*core)(nil)

// WorkerGuard is worker's guard key (engine.Domain).
func (e *core) WorkerGuard(worker string) string { return e.schema.workerGuard(worker) }

// Renew appends the build's TTL renewal to writes (engine.Domain).
func (e *core) Renew(c rueidis.DedicatedClient, writes rueidis.Commands) rueidis.Commands {
	return e.schema.renew(c, writes)
}

// NextMode is the transition a worker likely calls after mode on the same
// reservation, whose reads are worth keeping for it (engine.Domain); ""
// when none is.
func (e *core) NextMode(mode string) string {
	switch mode {
	case ModeDeliveryAccounting:
		return ModeHeartbeat
	case ModeHeartbeat:
		return ModeFinalize
	}
	return ""
}

// Settles tells the transitions after which a worker no longer holds the
// reservation (engine.Domain).
func (e *core) Settles(mode string) bool { return isSettlement(mode) }

// KeepAfter (engine.Domain): a settlement refused STALE is followed by
// the stale_rejected event its worker appends.
func (e *core) KeepAfter(err error) string {
	if isStale(err) {
		return modePrebuilt
	}
	return ""
}
