package cli

import (
	"slices"
	"strings"

	"github.com/hopper-queue/hopper/cmd/hopper/internal/attempt"
)

// defaultBatch is --batch when the command has {units} and --batch is not
// given: enough units per command to spare most start-ups, few enough that
// the batches shrink in time near the end (see docs/design.md#batches).
const defaultBatch = 8

// batched reports whether the command runs several units at once: it has
// {units}.
func (o workOptions) batched() bool { return slices.Contains(o.Command, attempt.UnitsPlaceholder) }

// checkBatch refuses a command and --batch that do not go together, and
// sets the default --batch: 1 with {unit}, defaultBatch with {units}.
func (o *workOptions) checkBatch() error {
	hasUnit := false
	for _, a := range o.Command {
		if strings.Contains(a, attempt.UnitsPlaceholder) && a != attempt.UnitsPlaceholder {
			return usagef("%s must be an argument of its own (each unit id becomes one argument), got %q", attempt.UnitsPlaceholder, a)
		}
		hasUnit = hasUnit || strings.Contains(a, attempt.Placeholder)
	}
	switch {
	case hasUnit && o.batched():
		return usagef("the command has both %s and %s: give %s to run one unit per command, or %s for several", attempt.Placeholder, attempt.UnitsPlaceholder, attempt.Placeholder, attempt.UnitsPlaceholder)
	case o.Batch > 1 && !o.batched():
		return usagef("--batch %d needs %s in the command, to name the units of a batch (with %s, each command runs one unit)", o.Batch, attempt.UnitsPlaceholder, attempt.Placeholder)
	case o.Batch == 0 && o.batched():
		o.Batch = defaultBatch
	case o.Batch == 0:
		o.Batch = 1
	}
	return nil
}
