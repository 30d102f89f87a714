package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Open refuses what no build could run with, before any I/O.
func TestOpenRefusals(t *testing.T) {
	r := newReplay(t)
	cases := []struct {
		name string
		open func() (*Build, error)
	}{
		{"nil client", func() (*Build, error) { return Open(nil, buildID, Options{}) }},
		{"empty build id", func() (*Build, error) { return Open(r, "", Options{}) }},
		{"keys made by hand", func() (*Build, error) { return OpenKeys(r, Keys{Meta: "m"}, Options{}) }},
		{"TTL under a millisecond", func() (*Build, error) { return Open(r, buildID, Options{TTL: time.Microsecond}) }},
		{"no attempt", func() (*Build, error) { return Open(r, buildID, Options{MaxAttempts: -1}) }},
		{"backoff not a range", func() (*Build, error) {
			return Open(r, buildID, Options{BackoffFloor: time.Second, BackoffCeil: time.Millisecond})
		}},
		{"negative backoff", func() (*Build, error) { return Open(r, buildID, Options{BackoffFloor: -1}) }},
		{"negative ResolveWait", func() (*Build, error) { return Open(r, buildID, Options{ResolveWait: -1}) }},
	}
	for _, c := range cases {
		b, err := c.open()
		assert.ErrorIs(t, err, ErrInvalidArgument, c.name)
		assert.Nil(t, b, c.name)
	}
	assert.Empty(t, r.sentLines())
}

func TestOptionsDefaults(t *testing.T) {
	t.Setenv(engineEnv, "")
	b, err := Open(newReplay(t), buildID, Options{})
	require.NoError(t, err)
	assert.Equal(t, Options{TTL: DefaultTTL, MaxAttempts: DefaultMaxAttempts, BackoffFloor: DefaultBackoffFloor, BackoffCeil: DefaultBackoffCeil,
		ResolveWait: DefaultResolveWait, ClusterWait: DefaultClusterWait, Engine: EngineDefault}, b.opts)
	assert.Equal(t, replayKeys, b.Keys())
}
