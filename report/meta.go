package report

import (
	"errors"
	"fmt"

	"github.com/hopper-queue/hopper/queue"
)

// Build states written in meta's "state" field by the publisher.
const (
	StateReady      = string(queue.StateReady)
	StateInitFailed = string(queue.StateInitFailed)
)

// Meta is a build's meta hash as the report needs it: the manifest the
// publisher froze, and the counters the transitions keep (see queue.Meta).
type Meta = queue.Meta

// ParseMeta reads meta as HGETALL returns it, with queue.ParseMeta. A field
// the verdict depends on that is present but unreadable (a count that is
// not an integer, a unit list that is not JSON) is an ErrCorrupt error
// naming the field: guessing could turn a broken build green. total_units
// is required once the build is ready.
func ParseMeta(fields map[string]string) (Meta, error) {
	m, err := queue.ParseMeta(fields)
	var me *queue.MetaError
	if errors.As(err, &me) {
		return Meta{}, fmt.Errorf("%w: %s", ErrCorrupt, me.Problem)
	}
	return m, err
}
