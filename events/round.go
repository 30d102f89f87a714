package events

import "strconv"

// TypeRoundOpened is the event a retry round begins with: which round,
// who opened it, and the units it runs again (see docs/design.md#rounds).
const TypeRoundOpened = "round_opened"

// StampRound appends "round":<n> as the last key of an encoded event
// object, for the events of round 2 and later; a round-1 event is
// returned as it is, so that a build never retried logs exactly the bytes
// the transition script would (docs/design.md#rounds). event must be an
// object Encode or StampPrebuilt made (it ends with '}' and is not empty).
func StampRound(event []byte, round int) []byte {
	if round <= 1 || len(event) < 2 || event[len(event)-1] != '}' {
		return event
	}
	out := make([]byte, 0, len(event)+16)
	out = append(out, event[:len(event)-1]...)
	out = append(out, `,"round":`...)
	out = strconv.AppendInt(out, int64(round), 10)
	return append(out, '}')
}

// RoundOf is the round an event belongs to: its "round", else 1.
func (e Event) RoundOf() int {
	if e.Round < 1 {
		return 1
	}
	return int(e.Round)
}

// RoundOpened is the first event of a retry round.
type RoundOpened struct {
	Round    int
	WorkerID string
	UnitIDs  []string
	AtMS     int64
}

type wireRoundOpened struct {
	Type     string   `json:"type"`
	Round    int      `json:"round"`
	WorkerID string   `json:"worker_id"`
	UnitIDs  []string `json:"unit_ids"`
	AtMS     int64    `json:"at_ms"`
}

// Encode returns the round_opened event.
func (e RoundOpened) Encode() ([]byte, error) {
	ids := e.UnitIDs
	if ids == nil {
		ids = []string{}
	}
	return marshal(wireRoundOpened{Type: TypeRoundOpened, Round: e.Round, WorkerID: e.WorkerID, UnitIDs: ids, AtMS: e.AtMS})
}
