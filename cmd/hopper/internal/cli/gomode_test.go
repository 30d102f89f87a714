package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEntryAfter(t *testing.T) {
	assert.True(t, entryAfter("1700000000001-0", "1700000000000-5"))
	assert.True(t, entryAfter("1700000000000-10", "1700000000000-9"), "by number, not text")
	assert.False(t, entryAfter("1700000000000-9", "1700000000000-10"))
	assert.False(t, entryAfter("5-0", "5-0"))
}

// Only a --go build's shards are parts of their package: another build's
// unit ids may hold spaces of their own.
func TestGoPartOf(t *testing.T) {
	assert.Equal(t, "example.com/m/p", goPartOf(goUnitType, "example.com/m/p -run ^(TestA)$"))
	assert.Equal(t, "example.com/m/p", goPartOf(goUnitType, "example.com/m/p"))
	assert.Equal(t, "", goPartOf("file", "spec/a b_spec.rb"))
}

func TestCINodes(t *testing.T) {
	assert.Equal(t, 1, ciNodes(Env{}))
	assert.Equal(t, 3, ciNodes(Env{"CI_NODE_TOTAL": "3"}))
	assert.Equal(t, 4, ciNodes(Env{"CIRCLE_NODE_TOTAL": "4", "CI_NODE_TOTAL": "3"}))
	assert.Equal(t, 1, ciNodes(Env{"BUILDKITE_PARALLEL_JOB_COUNT": "zero"}))
}

// What --go does not take is refused before anything runs or connects.
func TestGoUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--go", "./x", "--", "-short"}, `unexpected argument "./x": with --go, packages go after --`},
		{[]string{"run", "--go", "--batch", "4", "--", "./..."}, "--batch is not taken with --go"},
		{[]string{"work", "--go", "--build", "b", "--redis", "redis://127.0.0.1:1", "--units-from", "u.txt", "--", "./..."}, "--units-from is not taken with --go"},
		{[]string{"run", "--go", "--", "-json"}, "go test flag -json is not taken with --go"},
		{[]string{"run", "--go", "--", "-test.v"}, "give it as go test takes it, -v"},
	} {
		code, out, errs := runMain(Env{}, tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errs, tc.want, "%v", tc.args)
	}
}

func TestGoSlots(t *testing.T) {
	env := Env{"CI_NODE_TOTAL": "3"}
	assert.Equal(t, 12, workOptions{Processes: 4}.goSlots(env), "jobs on a shared Redis join the build")
	assert.Equal(t, 4, workOptions{Processes: 4, embedded: true}.goSlots(env), "no job joins the embedded server")
}
