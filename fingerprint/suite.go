package fingerprint

// SuiteIDLen is the length in hex digits of a SuiteID.
const SuiteIDLen = 32

// SuiteID names a suite across its builds: the digest of the project it
// belongs to (a Go module's path, a repository's root and remote; "" when
// unknown) and of its unit type and command. The unit ids and the revision
// are left out on purpose: each build of a suite runs another revision,
// and a unit added or removed must not make every other unit's history
// unknown. The project is in it because a command and a unit type are no
// identity: two modules both run `go test {unit}` over packages. Whatever
// is kept about a suite between builds (what each unit took, see package
// timings) is kept under this id, never under a build id.
func SuiteID(project string, in Inputs) string {
	return sum(struct {
		Command  string `json:"command"`
		Project  string `json:"project,omitempty"`
		UnitType string `json:"unit_type"`
	}{in.Command, project, in.UnitType})[:SuiteIDLen]
}
