package cluster

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/internal/redistest"
)

// The cluster the tests run on: three primaries, one replica each, every
// slot served, every address on loopback.
func TestClusterTopology(t *testing.T) {
	ctx := t.Context()
	primaries, err := cl.Primaries(ctx)
	require.NoError(t, err)
	require.Len(t, primaries, 3)
	for _, p := range primaries {
		assert.Regexp(t, `^127\.0\.0\.1:\d+$`, p)
		replicas, err := cl.ReplicasOf(ctx, p)
		require.NoError(t, err)
		assert.Len(t, replicas, 1, "replicas of %s", p)
	}
	assert.Len(t, cl.Addrs(), 6)
	// The client reaches every primary (it connects to replicas only to
	// read from them, which hopper never asks).
	nodes := cl.Client(t).Nodes()
	for _, p := range primaries {
		assert.Contains(t, nodes, p)
	}

	// Every node has the user the ACL pass runs as, denied scripts.
	for _, addr := range cl.Addrs() {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true,
			DisableCache: true, Username: redistest.NoScriptUser, Password: redistest.NoScriptUser})
		require.NoError(t, err, addr)
		err = c.Do(ctx, c.B().Eval().Script("return 1").Numkeys(0).Build()).Error()
		c.Close()
		assert.True(t, err != nil && strings.HasPrefix(err.Error(), "NOPERM"), "EVAL as %s on %s: %v, want NOPERM", redistest.NoScriptUser, addr, err)
	}
}
