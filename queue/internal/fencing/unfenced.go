//go:build hopper_unfenced

package fencing

// Built with -tags hopper_unfenced, the transitions no longer watch entry
// guards, and nothing stands in for them: what watching the unit's stream
// amounts to for ownership, since WATCH does not see XACK, XCLAIM or
// XAUTOCLAIM. (Watching the stream itself would abort on the PEXPIRE with
// which every transition renews the build's TTLs: correct by accident, at
// the price of every transition of a build aborting every other.) A kept
// watch (queue/internal/engine/kept_watch.go) is disarmed before its transition commits on
// it: a commit on reads made before the call, fenced by nothing. It is the
// broken design integration.TestConcurrentOwnership and
// TestKeptWatchNeverCommitsWhatAnotherWorkerChanged must catch, and do
// (make test-unfenced). Never ship a binary built this way.
const EntryGuards = false
