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
