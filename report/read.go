package report

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
)

// reader reads one build through queue's observer reads, which renew no
// TTL and write nothing, so a report never keeps a dead build alive. It
// words their errors as the report's (see readError).
type reader struct {
	b *queue.Build
}

// status is what deciding whether the build exists needs, read in one round
// trip.
func (rd reader) status(ctx context.Context) (queue.Presence, error) {
	st, err := rd.b.ReadPresence(ctx)
	if err != nil {
		return st, readError(err)
	}
	return st, nil
}

// progress is what one poll of the wait for completion reads, in one round
// trip: meta (finalized_count and ready_at may move), the workers' records
// and the server's clock, against which the workers' stamps are compared.
func (rd reader) progress(ctx context.Context) (queue.Poll, error) {
	p, err := rd.b.ReadPoll(ctx)
	if err != nil {
		return p, readError(err)
	}
	return p, nil
}

// attempts reads the whole attempt log in order, a page at a time. An entry
// that is not an event is ErrCorrupt naming the entry: the report cannot
// know what it said, so it must not judge without it.
func (rd reader) attempts(ctx context.Context) ([]events.Event, error) {
	var out []events.Event
	err := rd.b.ReadAttempts(ctx, func(id, raw string, ok bool) error {
		if !ok {
			return fmt.Errorf("%w: attempts entry %s has no json field", ErrCorrupt, id)
		}
		ev, err := events.Decode([]byte(raw))
		if err != nil {
			return fmt.Errorf("%w: attempts entry %s: %v", ErrCorrupt, id, err)
		}
		out = append(out, ev)
		return nil
	})
	return out, readError(err)
}

// manifest reads the unit ids from the units stream, in publishing order,
// for a meta that does not list them.
func (rd reader) manifest(ctx context.Context) ([]string, error) {
	ids, err := rd.b.ReadUnitIDs(ctx)
	return ids, readError(err)
}

// readError words a failed read of queue's as the report's: a key that
// holds something else is corrupt, any other failure that Redis could not
// be read. Other errors (nil, the report's own) pass unchanged.
func readError(err error) error {
	var re *queue.ReadError
	switch {
	case !errors.As(err, &re):
		return err
	case re.Unreadable():
		return fmt.Errorf("%w: %v", ErrCorrupt, re)
	}
	return fmt.Errorf("%w: %v", ErrUnreachable, re)
}
