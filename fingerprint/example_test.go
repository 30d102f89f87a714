package fingerprint_test

import (
	"fmt"

	"github.com/hopper-queue/hopper/fingerprint"
)

func ExampleDiff() {
	published := fingerprint.Of(fingerprint.Inputs{
		UnitIDs: []string{"./api", "./store"}, UnitType: "package", Command: "go test {unit}",
	})
	mine := fingerprint.Of(fingerprint.Inputs{
		UnitIDs: []string{"./api", "./store"}, UnitType: "package", Command: "go test -race {unit}",
	})
	fmt.Println(fingerprint.Diff(published, mine))
	// Output:
	// [command]
}
