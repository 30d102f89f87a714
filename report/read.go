package report

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/events"
	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// readTimeout bounds each read: rueidis retries a read-only command after a
// network error until its context ends, which rides out a restart but must
// not outlast a Redis that is gone.
const readTimeout = 5 * time.Second

// logPage is how many attempt-log entries one XRANGE returns: large builds
// log tens of thousands of events, which one reply should not carry.
const logPage = 1000

// reader reads one build's keys. It only reads: no TTL is renewed, nothing is
// written, so a report never keeps a dead build alive.
type reader struct {
	client rueidis.Client
	keys   queue.Keys
}

// status is what deciding whether the build exists needs, read in one round
// trip.
type status struct {
	meta      map[string]string
	tombstone bool
}

func (rd reader) status(ctx context.Context) (status, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	c := rd.client
	res := c.DoMulti(ctx,
		c.B().Hgetall().Key(rd.keys.Meta).Build(),
		c.B().Exists().Key(rd.keys.Exists).Build(),
	)
	meta, err := res[0].AsStrMap()
	if err != nil {
		return status{}, readError("HGETALL meta", err)
	}
	n, err := res[1].AsInt64()
	if err != nil {
		return status{}, readError("EXISTS exists", err)
	}
	return status{meta: meta, tombstone: n == 1}, nil
}

// progress is what one poll of the wait for completion reads, in one round
// trip: meta (finalized_count and ready_at may move), the workers' records
// and the server's clock, against which the workers' stamps are compared.
type progress struct {
	meta    map[string]string
	workers map[string]string
	nowMS   int64
}

func (rd reader) progress(ctx context.Context) (progress, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	c := rd.client
	res := c.DoMulti(ctx,
		c.B().Hgetall().Key(rd.keys.Meta).Build(),
		c.B().Hgetall().Key(rd.keys.Workers).Build(),
		c.B().Time().Build().ToRetryable(), // TIME writes nothing: retry it with the reads
	)
	var p progress
	var err error
	if p.meta, err = res[0].AsStrMap(); err != nil {
		return p, readError("HGETALL meta", err)
	}
	if p.workers, err = res[1].AsStrMap(); err != nil {
		return p, readError("HGETALL workers", err)
	}
	t, err := res[2].AsStrSlice()
	if err != nil || len(t) != 2 {
		return p, readError("TIME", err)
	}
	sec, err1 := strconv.ParseInt(t[0], 10, 64)
	usec, err2 := strconv.ParseInt(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return p, fmt.Errorf("%w: TIME replied %q", ErrCorrupt, t)
	}
	p.nowMS = sec*1000 + usec/1000
	return p, nil
}

// attempts reads the whole attempt log in order, a page at a time. An entry
// that is not an event is ErrCorrupt naming the entry: the report cannot
// know what it said, so it must not judge without it.
func (rd reader) attempts(ctx context.Context) ([]events.Event, error) {
	var out []events.Event
	err := rd.scan(ctx, rd.keys.Attempts, func(id string, fields map[string]string) error {
		raw, ok := fields["json"]
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
	return out, err
}

// manifest reads the unit ids from the units stream, in publishing order,
// for a meta that does not list them. Settled entries are acknowledged,
// never deleted, so the stream still holds every unit once.
func (rd reader) manifest(ctx context.Context) ([]string, error) {
	var ids []string
	err := rd.scan(ctx, rd.keys.Units, func(_ string, fields map[string]string) error {
		ids = append(ids, fields["id"])
		return nil
	})
	return ids, err
}

// scan calls each for every entry of stream in order, with XRANGE pages
// that start just after the last id seen (exclusive ranges need Redis 6.2).
func (rd reader) scan(ctx context.Context, stream string, each func(id string, fields map[string]string) error) error {
	c := rd.client
	start := "-"
	for {
		pctx, cancel := context.WithTimeout(ctx, readTimeout)
		entries, err := c.Do(pctx, c.B().Xrange().Key(stream).Start(start).End("+").Count(logPage).Build()).AsXRange()
		cancel()
		if err != nil {
			return readError("XRANGE "+stream, err)
		}
		for _, e := range entries {
			if err := each(e.ID, e.FieldValues); err != nil {
				return err
			}
		}
		if len(entries) < logPage {
			return nil
		}
		start = "(" + entries[len(entries)-1].ID
	}
}

// readError wraps a failed read: a reply of the wrong shape means the key
// holds something else (corrupt), any other error that Redis could not be
// read.
func readError(what string, err error) error {
	if err == nil {
		return fmt.Errorf("%w: %s: unexpected reply", ErrCorrupt, what)
	}
	if re, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(re.Error(), "WRONGTYPE") {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnreachable, what, err)
}
