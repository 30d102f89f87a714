//go:build faults && !race

package integration

const raceEnabled = false
