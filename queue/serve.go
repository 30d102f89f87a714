package queue

// checkServe refuses a serve order that is not the manifest's units, each
// once; given maps each unit id to its index in UnitIDs.
func checkServe(serve []string, given map[string]int) error {
	if serve == nil {
		return nil
	}
	if len(serve) != len(given) {
		return errInvalid("serve order has %d units, the manifest %d", len(serve), len(given))
	}
	seen := make(map[string]bool, len(serve))
	for i, id := range serve {
		if _, ok := given[id]; !ok {
			return errInvalid("serve order unit #%d %q is not a unit of the manifest", i+1, id)
		}
		if seen[id] {
			return errInvalid("serve order unit #%d %q repeats", i+1, id)
		}
		seen[id] = true
	}
	return nil
}

// serveOrder is the order Publish queues the units in.
func (m Manifest) serveOrder() []string {
	if m.Serve != nil {
		return m.Serve
	}
	return m.UnitIDs
}
