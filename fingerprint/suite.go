package fingerprint

// SuiteIDLen is the length in hex digits of a SuiteID.
const SuiteIDLen = 32

// SuiteID names a suite across its builds: the digest of its unit type and
// command alone. The unit ids and the revision are left out on purpose:
// each build of a suite runs another revision, and a unit added or removed
// must not make every other unit's history unknown. Whatever is kept about
// a suite between builds (what each unit took, see package timings) is
// kept under this id, never under a build id.
func SuiteID(in Inputs) string {
	return sum(struct {
		Command  string `json:"command"`
		UnitType string `json:"unit_type"`
	}{in.Command, in.UnitType})[:SuiteIDLen]
}
