package queue

// Reservation is a worker's hold on one unit: the stream entry it was
// delivered from and the delivery count that fences every later transition on
// it. A reservation goes stale when someone else reclaims, settles or deletes
// the entry; the transitions then return ErrStale and write nothing.
type Reservation struct {
	WorkerID      string
	Stream        Stream
	EntryID       string
	UnitID        string
	UnitType      string
	DeliveryCount int64
	RetryIndex    int64
	ReclaimCount  int64
}

// OwnershipGeneration counts the owners the unit has had when this
// reservation was taken: 1 + retries + reclaims.
func (r Reservation) OwnershipGeneration() int64 { return 1 + r.RetryIndex + r.ReclaimCount }

func (r Reservation) check() error {
	if err := checkID("worker id", r.WorkerID); err != nil {
		return err
	}
	if _, err := ParseStream(string(r.Stream)); err != nil {
		return err
	}
	if err := checkEntryID(r.EntryID); err != nil {
		return err
	}
	if err := checkID("unit id", r.UnitID); err != nil {
		return err
	}
	if r.DeliveryCount < 1 {
		return errInvalid("delivery count %d is below 1", r.DeliveryCount)
	}
	return nil
}

// A fenced transition names both the stream entry it acts on and the unit
// that entry carries, and what it writes goes by the unit: its state, the
// events naming it, the worker's current unit. An entry whose own id field
// names another unit would let a caller settle unit B on the ownership of
// unit A's entry: B's state moved, B finalized while its own entry stays
// pending for someone else to finalize again. So every fenced transition
// but the heartbeat (which writes nothing of the unit's but the worker's
// current unit, and decides on the pending row alone) checks that the
// entry's id field is the caller's unit.
//
// A mismatch is refused with ErrInvalidArgument, not ErrStale: the caller
// still holds the entry, and STALE would tell it that it lost the entry to
// another worker, which it did not; the call itself is wrong, and its
// caller must learn so loudly rather than drop a result as routine. The
// check comes after the fence, so a stale reservation is STALE whatever it
// names, and before the unit's state is looked at; nothing is written.
//
// The entry's fields come from what the Build remembers of the entries its
// workers read and its reclaims ranged (see entry_units.go), or else from an
// XRANGE in the transition's first round trip: never a round trip of its
// own. An entry deleted from the stream (XDEL, trimming) while pending has
// no fields left to compare, unless the Build remembers them; it is then
// settled on its pending row alone, as the transition script settles it;
// that script reads no entry field here at all.
// See docs/design.md#entry-ids.

// entryUnitCheck refuses r when the entry h read names another unit than r's.
func entryUnitCheck(r Reservation, h held) error {
	switch {
	case !h.entry.exists:
		return nil
	case !h.entry.hasID:
		return errInvalid("%s entry %s names no unit (no id field), not unit %q", r.Stream, r.EntryID, r.UnitID)
	case h.entry.id != r.UnitID:
		return errInvalid("%s entry %s carries unit %q, not unit %q", r.Stream, r.EntryID, h.entry.id, r.UnitID)
	}
	return nil
}
