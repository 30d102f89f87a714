//go:build hopper_unfenced

package queue

// Built with -tags hopper_unfenced, the transitions no longer watch entry
// guards: the broken design integration.TestConcurrentOwnership must catch.
// Never ship a binary built this way.
const entryGuards = false
