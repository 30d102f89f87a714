//go:build faults && race

package integration

// raceEnabled: the tests run with the race detector, so the worker
// processes they start are built with it too.
const raceEnabled = true
