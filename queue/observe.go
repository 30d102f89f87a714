package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/redis/rueidis"
)

// An observer (a report, a follower of the log) reads a build with plain
// reads that renew no TTL and write nothing, so that watching a build never
// keeps a dead one alive. Each read that fails names itself in a ReadError,
// so the observer can tell a key holding something else from a Redis it
// cannot reach.

// ReadError is an observer's read that failed.
type ReadError struct {
	// Read names it, as the command and key: "HGETALL meta", "TIME".
	Read string
	// Err is why; nil when the reply was not of the shape the read expects.
	Err     error
	corrupt bool // the reply said something no Redis says (TIME not numeric)
}

func (e *ReadError) Error() string {
	if e.Err == nil {
		return e.Read + ": unexpected reply"
	}
	return e.Read + ": " + e.Err.Error()
}

func (e *ReadError) Unwrap() error { return e.Err }

// Unreadable reports whether the read reached Redis and found something
// other than the build's layout: a key of another type (WRONGTYPE), or a
// reply of another shape. Otherwise Redis could not be read.
func (e *ReadError) Unreadable() bool {
	if e.Err == nil || e.corrupt {
		return true
	}
	re, ok := rueidis.IsRedisErr(e.Err)
	return ok && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

// Presence is a build's meta, as stored, and its tombstone.
type Presence struct {
	Meta      map[string]string // empty: no meta
	Tombstone bool
}

// ReadPresence reads meta and the tombstone in one round trip, meta first:
// whether a build was published, is there, or is gone. Unlike Status it
// does not judge meta (see ParseMeta).
func (b *Build) ReadPresence(ctx context.Context) (Presence, error) {
	ctx, cancel := boundedRead(ctx, readTimeout)
	defer cancel()
	c := b.client
	res := c.DoMulti(ctx,
		c.B().Hgetall().Key(b.schema.keys.Meta).Build(),
		c.B().Exists().Key(b.schema.keys.Exists).Build(),
	)
	meta, err := res[0].AsStrMap()
	if err != nil {
		return Presence{}, &ReadError{Read: "HGETALL meta", Err: err}
	}
	n, err := res[1].AsInt64()
	if err != nil {
		return Presence{}, &ReadError{Read: "EXISTS exists", Err: err}
	}
	return Presence{Meta: meta, Tombstone: n == 1}, nil
}

// Poll is one look at a running build: meta, as stored (finalized_count
// and ready_at move), the workers' records, and the server's clock, against
// which the workers' stamps compare.
type Poll struct {
	Meta    map[string]string // empty: no meta
	Workers map[string]string // worker id to its record
	NowMS   int64             // the server's time, epoch milliseconds
}

// ReadPoll reads a Poll in one round trip: what waiting for a build's
// completion looks at, every poll, to tell progress from silence. Progress
// reads the counts alone.
func (b *Build) ReadPoll(ctx context.Context) (Poll, error) {
	ctx, cancel := boundedRead(ctx, readTimeout)
	defer cancel()
	c := b.client
	res := c.DoMulti(ctx,
		c.B().Hgetall().Key(b.schema.keys.Meta).Build(),
		c.B().Hgetall().Key(b.schema.keys.Workers).Build(),
		c.B().Time().Build().ToRetryable(), // TIME writes nothing: retry it with the reads
	)
	var p Poll
	var err error
	if p.Meta, err = res[0].AsStrMap(); err != nil {
		return p, &ReadError{Read: "HGETALL meta", Err: err}
	}
	if p.Workers, err = res[1].AsStrMap(); err != nil {
		return p, &ReadError{Read: "HGETALL workers", Err: err}
	}
	p.NowMS, err = observedNow(res[2])
	return p, err
}

// scanPage is how many entries one XRANGE of a scan returns: large builds
// log tens of thousands of events, which one reply should not carry.
const scanPage = 1000

// ReadAttempts calls each with every entry of the attempt log in order, a
// page at a time: its id, and the event it holds (ok false: the entry has
// no event, which no transition appends). An error of each ends the scan.
func (b *Build) ReadAttempts(ctx context.Context, each func(id, event string, ok bool) error) error {
	return b.scan(ctx, b.schema.keys.Attempts, func(id string, fields map[string]string) error {
		ev, ok := fields["json"]
		return each(id, ev, ok)
	})
}

// ReadUnitIDs returns the units stream's unit ids, in publishing order.
// Settled entries are acknowledged, never deleted, so the stream holds
// every unit once.
func (b *Build) ReadUnitIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := b.scan(ctx, b.schema.keys.Units, func(_ string, fields map[string]string) error {
		ids = append(ids, fields["id"])
		return nil
	})
	return ids, err
}

// scan calls each for every entry of stream in order, each page of it
// bounded by readTimeout.
func (b *Build) scan(ctx context.Context, stream string, each func(id string, fields map[string]string) error) error {
	return b.scanAfter(ctx, stream, "", readTimeout, each)
}

// scanAfter calls each for every entry of stream after entry id after ("":
// from the first), in order, with XRANGE pages that start just after the
// last id seen (exclusive ranges need Redis 6.2). bound limits each page's
// read; 0 leaves ctx as given.
func (b *Build) scanAfter(ctx context.Context, stream, after string, bound time.Duration, each func(id string, fields map[string]string) error) error {
	c := b.client
	start := "-"
	if after != "" {
		start = "(" + after
	}
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if bound > 0 {
			pctx, cancel = boundedRead(ctx, bound)
		}
		entries, err := c.Do(pctx, c.B().Xrange().Key(stream).Start(start).End("+").Count(scanPage).Build()).AsXRange()
		cancel()
		if err != nil {
			return &ReadError{Read: "XRANGE " + stream, Err: err}
		}
		for _, e := range entries {
			if err := each(e.ID, e.FieldValues); err != nil {
				return err
			}
		}
		if len(entries) < scanPage {
			return nil
		}
		start = "(" + entries[len(entries)-1].ID
	}
}

// observedNow reads an observer's TIME reply as epoch milliseconds, through
// machinery.ParseTime as the transitions read theirs: the workers' stamps an observer
// compares with are the server's time, never a client's. A reply that is
// not two numbers is corrupt (no Redis sends it); a failed one is not.
func observedNow(r rueidis.RedisResult) (int64, error) {
	if err := r.Error(); err != nil {
		return 0, &ReadError{Read: "TIME", Err: err}
	}
	ms, err := machinery.ParseTime(r)
	if err != nil {
		return 0, &ReadError{Read: "TIME", Err: err, corrupt: true}
	}
	return ms, nil
}

// ReadAttemptsAfter is ReadAttempts from just after entry id after ("": from
// the first): a follower of the log (hopper status, hopper events --follow)
// keeps the id of the last entry it read and reads, each look, only what
// was logged since. Unlike ReadAttempts it bounds no page: ctx is the
// follower's, which decides how long to wait through an outage.
func (b *Build) ReadAttemptsAfter(ctx context.Context, after string, each func(id, event string, ok bool) error) error {
	return b.scanAfter(ctx, b.schema.keys.Attempts, after, 0, func(id string, fields map[string]string) error {
		ev, ok := fields["json"]
		return each(id, ev, ok)
	})
}

// Look is a follower's look at a build as it now runs: its latest round
// (docs/design.md#rounds), that round's meta and workers, the tombstone,
// and the server's clock, against which the workers' stamps compare.
type Look struct {
	Round     int
	Meta      map[string]string // the round's, as stored; empty: no meta
	Workers   map[string]string // the round's, worker id to its record
	Tombstone bool
	NowMS     int64 // the server's time, epoch milliseconds
}

// ReadLook reads a Look: the build's meta, tombstone, workers and TIME in
// one round trip, and, when meta names a later round (MetaRound), that
// round's meta and workers in a second. A malformed round is corrupt. A
// round that meta names but whose meta is missing is corrupt too. Like
// ReadAttemptsAfter it takes ctx as given, and its batch is not retried
// (TIME is no read-only command): a look during an outage fails, and the
// follower looks again.
func (b *Build) ReadLook(ctx context.Context) (Look, error) {
	c := b.client
	res := c.DoMulti(ctx,
		c.B().Hgetall().Key(b.schema.keys.Meta).Build(),
		c.B().Exists().Key(b.schema.keys.Exists).Build(),
		c.B().Hgetall().Key(b.schema.keys.Workers).Build(),
		c.B().Time().Build())
	l := Look{Round: 1}
	var err error
	if l.Meta, err = res[0].AsStrMap(); err != nil {
		return l, &ReadError{Read: "HGETALL meta", Err: err}
	}
	tomb, err := res[1].AsInt64()
	if err != nil {
		return l, &ReadError{Read: "EXISTS exists", Err: err}
	}
	l.Tombstone = tomb == 1
	if l.Workers, err = res[2].AsStrMap(); err != nil {
		return l, &ReadError{Read: "HGETALL workers", Err: err}
	}
	if l.NowMS, err = observedNow(res[3]); err != nil {
		return l, err
	}
	if l.Round, err = MetaRound(l.Meta); err != nil || l.Round == 1 {
		return l, err
	}
	return l, b.lookAtRound(ctx, &l)
}

// lookAtRound puts the meta and workers of round l.Round in l's.
func (b *Build) lookAtRound(ctx context.Context, l *Look) error {
	keys := b.schema.keys.OfRound(l.Round)
	c := b.client
	res := c.DoMulti(ctx,
		c.B().Hgetall().Key(keys.Meta).Build(),
		c.B().Hgetall().Key(keys.Workers).Build())
	meta, err := res[0].AsStrMap()
	if err != nil {
		return &ReadError{Read: "HGETALL round meta", Err: err}
	}
	workers, err := res[1].AsStrMap()
	if err != nil {
		return &ReadError{Read: "HGETALL round workers", Err: err}
	}
	if len(meta) == 0 {
		return fmt.Errorf("%w: the build's meta names round %d, whose meta %s is missing", ErrCorrupt, l.Round, keys.Meta)
	}
	l.Meta, l.Workers = meta, workers
	return nil
}

// Completion is what a follower of the attempt log (hopper events
// --follow) reads each look to know whether to go on: the build's latest
// round, that round's state and counts, and the tombstone.
type Completion struct {
	Round int
	// Published is false when the round's meta has no state: not
	// published yet, or gone (see Tombstone). State is that state.
	Published        bool
	State            string
	Finalized, Total int64
	Tombstone        bool
}

// ReadCompletion reads a Completion: the round meta names (MetaRound: a
// malformed one is corrupt), then that round's counts and the tombstone
// in one round trip. A ready round's counts are the publisher's and the
// finalizers' whole numbers: one that is missing or not a count is a
// *MetaError naming it, as such a round could never be read as complete.
// ctx is taken as given (see ReadAttemptsAfter).
func (b *Build) ReadCompletion(ctx context.Context) (Completion, error) {
	c := b.client
	v, err := c.Do(ctx, c.B().Hget().Key(b.schema.keys.Meta).Field(metaRound).Build()).ToString()
	round := map[string]string{}
	if err == nil {
		round[metaRound] = v
	} else if !rueidis.IsRedisNil(err) {
		return Completion{}, &ReadError{Read: "HGET meta round", Err: err}
	}
	n, err := MetaRound(round)
	if err != nil {
		return Completion{}, err
	}
	return b.readRoundCompletion(ctx, b.schema.keys.OfRound(n))
}

// readRoundCompletion reads the state and counts of the round whose keys
// are keys, and the tombstone.
func (b *Build) readRoundCompletion(ctx context.Context, keys Keys) (Completion, error) {
	c := b.client
	res := c.DoMulti(ctx,
		c.B().Hmget().Key(keys.Meta).Field(metaFinalized, metaTotalUnits, metaState).Build(),
		c.B().Exists().Key(keys.Exists).Build())
	vals, err := res[0].ToArray()
	if err != nil {
		return Completion{}, &ReadError{Read: "HMGET meta", Err: err}
	}
	tomb, err := res[1].AsInt64()
	if err != nil {
		return Completion{}, &ReadError{Read: "EXISTS exists", Err: err}
	}
	if len(vals) != 3 {
		return Completion{}, &ReadError{Read: "HMGET meta", Err: fmt.Errorf("replied %d values, want 3", len(vals))}
	}
	cp := Completion{Round: keys.Round(), Tombstone: tomb == 1}
	cp.State, cp.Published = messageString(vals[2])
	if !cp.Published || cp.State != stateReady {
		return cp, nil
	}
	total, ok := messageString(vals[1])
	if cp.Total, err = strconv.ParseInt(total, 10, 64); err != nil || !ok {
		return cp, metaErrorf("meta %s is ready but its total_units %q is not a count", keys.Meta, total)
	}
	if fin, ok := messageString(vals[0]); ok {
		if cp.Finalized, err = strconv.ParseInt(fin, 10, 64); err != nil {
			return cp, metaErrorf("meta %s is ready but its finalized_count %q is not a count", keys.Meta, fin)
		}
	}
	return cp, nil
}
