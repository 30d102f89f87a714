package redistest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/internal/redistest"
)

// The README's ACL SETUSER line is the one the ACL pass of the suite runs
// as: a rule added to one must be added to the other.
func TestREADMEGivesMinimalACL(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := redistest.MinimalACLLine("hopper", "PASSWORD")
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md lacks the minimal ACL line of redistest.MinimalACL:\n%s", want)
	}
}
