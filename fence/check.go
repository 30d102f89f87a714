package fence

// Row is one pending entry as XPENDING reports it: the entry id, the consumer
// that owns it, how long since it was last delivered, and how many times it
// has been delivered.
type Row struct {
	EntryID       string
	Consumer      string
	IdleMS        int64
	DeliveryCount int64
}

// Expect is what a worker believes about an entry it holds: its id as the
// worker names it, its owner and its delivery count. A zero DeliveryCount
// means "any count": delivery accounting is fenced by owner alone, because
// it is the step that learns the count.
type Expect struct {
	EntryID       string
	Owner         string
	DeliveryCount int64
}

// Holds reports whether row (found tells whether XPENDING returned one) is
// still pending, is the entry want.EntryID names, spelt the same, owned by
// want.Owner and, when want.DeliveryCount is set, at that delivery count. A
// false result is the STALE status: somebody reclaimed, settled or deleted
// the entry since the worker reserved it.
//
// The id is compared because Redis reads other spellings of an id ("01-0"
// for 1-0) as the same entry, while the entry's guard is named after the
// spelling: a row reported under another id than the one whose guard was
// watched is not one the transition is fenced on. An empty EntryID never
// holds. See docs/design.md#entry-ids.
func Holds(row Row, found bool, want Expect) bool {
	if !found || row.EntryID != want.EntryID || row.Consumer != want.Owner {
		return false
	}
	return want.DeliveryCount == 0 || row.DeliveryCount == want.DeliveryCount
}
