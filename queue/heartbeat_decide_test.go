package queue

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeartbeatScratch(t *testing.T) {
	r, b := heldUnit(t)
	require.NoError(t, b.Heartbeat(context.Background(), w1u1))
	for _, l := range r.sentLines() {
		t.Log(l)
	}
	assert.NotNil(t, r.lastCommit())
}
