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

// Expect is what a worker believes about an entry it holds. A zero
// DeliveryCount means "any count": delivery accounting is fenced by owner
// alone, because it is the step that learns the count.
type Expect struct {
	Owner         string
	DeliveryCount int64
}

// Holds reports whether row (found tells whether XPENDING returned one) is
// still pending, owned by want.Owner and, when want.DeliveryCount is set, at
// that delivery count. A false result is the STALE status: somebody reclaimed,
// settled or deleted the entry since the worker reserved it.
func Holds(row Row, found bool, want Expect) bool {
	if !found || row.Consumer != want.Owner {
		return false
	}
	return want.DeliveryCount == 0 || row.DeliveryCount == want.DeliveryCount
}
