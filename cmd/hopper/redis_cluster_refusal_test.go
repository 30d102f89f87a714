package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterReachedAsASingleServer: a user who may not ask a Redis
// Cluster for its slots reaches one node as a single server, and the
// build's keys live on another: the report says what to give instead of
// the server's MOVED.
func TestClusterReachedAsASingleServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := redistest.StartCluster(ctx, redistest.ClusterOptions{Primaries: 3})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Terminate(context.Background()) })
	user := "h43-no-slots"
	rules := append([]string{"reset", "on", ">" + user}, slices.DeleteFunc(slices.Clone(redistest.MinimalACL), func(r string) bool {
		return r == "+cluster|slots" || r == "+cluster|shards"
	})...)
	for _, addr := range c.Addrs() {
		n := c.NodeClient(t, addr)
		require.NoError(t, n.Do(ctx, n.B().AclSetuser().Username(user).Rule(rules...).Build()).Error())
	}
	first := c.Addrs()[0]
	build := elsewhere(t, ctx, c, first)

	url := fmt.Sprintf("redis://%s:%s@%s", user, user, first)
	code, out, errs := hopper(t, t.TempDir(), baseEnv(), "report", "--build", build, "--redis", url, "--init-timeout", "1")
	assert.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Contains(t, errs, "the server is a Redis Cluster node reached as a single server: give the cluster's nodes")
	assert.NotContains(t, errs, "MOVED")
}

// elsewhere is a build id whose keys' slot another node than addr serves.
func elsewhere(t *testing.T, ctx context.Context, c *redistest.Cluster, addr string) string {
	admin := c.NodeClient(t, addr)
	for i := range 100 {
		build := fmt.Sprintf("%s-%d", redistest.BuildID(t), i)
		slot, err := admin.Do(ctx, admin.B().ClusterKeyslot().Key("hopper:{"+build+"}:meta").Build()).AsInt64()
		require.NoError(t, err)
		primary, err := c.PrimaryOf(ctx, int(slot))
		require.NoError(t, err)
		if primary != addr {
			return build
		}
	}
	t.Fatal("no build id whose slot another node serves")
	return ""
}
