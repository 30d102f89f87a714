package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
)

// The exit code of --processes over its slots' ends, whatever their order.
func TestSlotsExitCode(t *testing.T) {
	aborted := fmt.Errorf("unit x exceeded its max duration: %w", worker.ErrAborted)
	infra := fmt.Errorf("reclaim: %w", queue.ErrCorrupt)
	for _, c := range []struct {
		errs []error
		want int
	}{
		{nil, 0},
		{[]error{nil}, 0},
		{[]error{nil, nil, nil}, 0},
		{[]error{aborted}, 4},
		{[]error{nil, aborted, nil}, 4},
		{[]error{aborted, aborted}, 4},
		{[]error{infra}, 2},
		{[]error{nil, infra}, 2},
		{[]error{aborted, infra}, 2},
		{[]error{infra, aborted}, 2},
		{[]error{nil, aborted, context.Canceled}, 2},
		{[]error{errors.New("fingerprint mismatch"), nil}, 2},
	} {
		assert.Equal(t, c.want, slotsExitCode(c.errs), "%v", c.errs)
	}
}
