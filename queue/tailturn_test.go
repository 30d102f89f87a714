package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTailTurn(t *testing.T) {
	turn := newTailTurn(5 * time.Millisecond)
	held, err := turn.take(context.Background())
	require.NoError(t, err)
	require.True(t, held)

	// The turn is taken: the next requeue waits its bound, then goes ahead.
	start := time.Now()
	held, err = turn.take(context.Background())
	require.NoError(t, err)
	require.False(t, held)
	require.GreaterOrEqual(t, time.Since(start), 5*time.Millisecond)

	// A cancelled caller stops waiting.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	held, err = newTailTurnHeld(t).take(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, held)

	// Given back, the turn goes to the one waiting.
	turn = newTailTurnHeld(t)
	got := make(chan bool)
	go func() {
		h, _ := turn.take(context.Background())
		got <- h
	}()
	turn.give()
	require.True(t, <-got)
}

func newTailTurnHeld(t *testing.T) tailTurn {
	t.Helper()
	turn := newTailTurn(time.Hour)
	held, err := turn.take(context.Background())
	require.NoError(t, err)
	require.True(t, held)
	return turn
}
