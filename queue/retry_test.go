package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterWaitOption(t *testing.T) {
	o, err := Options{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, DefaultClusterWait, o.ClusterWait, "zero means the default")
	o, err = Options{ClusterWait: time.Minute}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, time.Minute, o.ClusterWait)
	_, err = Options{ClusterWait: -time.Second}.withDefaults()
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.ErrorContains(t, err, "ClusterWait -1s")
}
