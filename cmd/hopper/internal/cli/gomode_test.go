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
