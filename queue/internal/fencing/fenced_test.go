//go:build !hopper_unfenced

package fencing

import "testing"

// Without the tag the transitions watch entry guards: a build that did not
// would settle units twice (make test-unfenced shows how).
func TestEntryGuardsOnWithoutTheTag(t *testing.T) {
	if !EntryGuards {
		t.Fatal("EntryGuards is false in a build without hopper_unfenced")
	}
}
