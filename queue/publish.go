package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/redis/rueidis"
)

// DefaultTombstoneTTL is how long a published build id stays burnt: while
// its tombstone lives, the id is never published again, even after the
// build's own keys expire.
const DefaultTombstoneTTL = 7 * 24 * time.Hour

// unitsPerHSET bounds one HSET of zeroed unit states, so that a suite of
// many units does not become one huge command.
const unitsPerHSET = 1000

// Publish lays the build out from m, holding lease, in one WATCH/MULTI/EXEC
// over the leader, tombstone, meta and unit_state keys. Checked in this order, each
// refusal writing nothing:
//   - the leader is not lease: ErrLeaseLost;
//   - the tombstone exists (the id was published before): ErrBuildBurnt;
//   - meta exists: ErrAlreadyPublished;
//   - the unit states are to be written and their key holds something
//     else than a hash: ErrCorrupt.
//
// Success (m has no load errors): both unit streams are made afresh with the
// consumer group at 0, each unit is added to the units stream in order
// (m.Serve's when given) with a zeroed unit_state, and meta gets m's fields
// with state ready, ready_at (server time), finalized_count 0 and
// requeued_units_count 0. Failure mode (m has load errors): meta gets m's
// fields with state init_failed and ready_at; no stream is made. Either way the tombstone is set for
// tombstoneTTL (zero: DefaultTombstoneTTL) and every live key gets m's TTL.
// Meta also records lease's token as the publisher.
//
// m is checked before anything is sent (ErrInvalidArgument, naming the bad
// value). ErrOutcomeUnknown: the connection broke after the commit was sent
// and a look at meta could not tell whether it applied; Status or Join will.
// When that look finds the build another publisher's, the commit did not
// apply and never will: ErrAlreadyPublished.
func (b *Build) Publish(ctx context.Context, lease Lease, m Manifest, tombstoneTTL time.Duration) error {
	if err := lease.check(); err != nil {
		return err
	}
	if err := b.schema.checkLifecycleKeys(); err != nil {
		return err
	}
	m, err := m.normalized(b.opts.TTL)
	if err != nil {
		return err
	}
	if tombstoneTTL == 0 {
		tombstoneTTL = DefaultTombstoneTTL
	}
	if tombstoneTTL < time.Millisecond {
		return errInvalid("tombstone TTL %v is below one millisecond", tombstoneTTL)
	}
	fields := m.metaFields()
	fields[metaPublisher] = lease.Token
	fields[metaGuarded] = guardedMark // in the layout's MULTI (see meta.go)

	wait := b.opts.BackoffFloor
	for n := 1; ; n++ {
		var ambiguous bool
		err := b.client.Dedicated(func(c rueidis.DedicatedClient) error {
			return b.publishOnce(dedicatedContext(ctx), c, lease, m, fields, tombstoneTTL, &ambiguous)
		})
		if ambiguous {
			s, serr := b.Status(context.WithoutCancel(ctx))
			switch {
			case serr == nil && s.Published && s.Publisher == lease.Token:
				return nil
			case serr != nil: // say why the look could not tell
				return fmt.Errorf("%w: publishing %s: %w (then %v)", ErrOutcomeUnknown, b.schema.keys.Meta, err, serr)
			case s.Published:
				// Another publisher's meta: this commit was not applied
				// (had it been, theirs would have been refused), and never
				// will be, its WATCH having seen meta move.
				return fmt.Errorf("%w: %s was published by %q while this commit's reply was lost (%v)",
					ErrAlreadyPublished, b.schema.keys.Meta, s.Publisher, err)
			}
			return fmt.Errorf("%w: publishing %s: %w", ErrOutcomeUnknown, b.schema.keys.Meta, err)
		}
		redirected := isRedirect(err)
		if !errors.Is(err, errAborted) && !redirected {
			return refusedCommand(b.core.watchDropped(ctx, err))
		}
		// A watched key moved (the lease expired, or someone published):
		// look again, and the checks will say what happened. Or the build's
		// slot moved: a plain command follows the redirect and refreshes the
		// client's slot map, and the next dedicated connection goes there.
		if redirected {
			_ = b.client.Do(ctx, b.client.B().Exists().Key(b.schema.keys.Leader).Build()).Error()
		}
		if n >= b.opts.MaxAttempts {
			return fmt.Errorf("%w after %d attempts to publish", ErrContention, n)
		}
		if err := sleep(ctx, jitter(wait)); err != nil {
			return err
		}
		wait = min(wait*2, b.opts.BackoffCeil)
	}
}

func (b *Build) publishOnce(ctx context.Context, c rueidis.DedicatedClient, lease Lease, m Manifest, fields map[string]string, tombstoneTTL time.Duration, ambiguous *bool) error {
	k := b.schema.keys
	res := c.DoMulti(ctx,
		c.B().Watch().Key(k.Leader, k.Exists, k.Meta, k.UnitState).Build(),
		c.B().Get().Key(k.Leader).Build(),
		c.B().Exists().Key(k.Exists).Build(),
		c.B().Exists().Key(k.Meta).Build(),
		c.B().Time().Build(),
		c.B().Type().Key(k.UnitState).Build())
	if err := res[0].Error(); err != nil {
		return err
	}
	leader, _, err := optionalString(res[1])
	if err != nil {
		unwatch(c)
		return err
	}
	tomb, err1 := res[2].AsInt64()
	meta, err2 := res[3].AsInt64()
	now, err3 := machinery.ParseTime(res[4])
	unitState, err4 := res[5].ToString()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		unwatch(c)
		return err
	}
	switch {
	case leader != lease.Token:
		unwatch(c)
		return fmt.Errorf("%w: %s holds %q, not %q", ErrLeaseLost, k.Leader, leader, lease.Token)
	case tomb == 1:
		unwatch(c)
		return fmt.Errorf("%w: tombstone %s exists (published before): choose a new build id", ErrBuildBurnt, k.Exists)
	case meta == 1:
		unwatch(c)
		return fmt.Errorf("%w: %s exists", ErrAlreadyPublished, k.Meta)
	case len(m.LoadErrors) == 0 && len(m.UnitIDs) > 0 && unitState != "none" && unitState != "hash":
		// Its HSET would fail inside EXEC while the rest applied: a
		// ready build without its unit states.
		unwatch(c)
		return fmt.Errorf("%w: %s holds a %s, not a hash", ErrCorrupt, k.UnitState, unitState)
	}

	res = c.DoMulti(ctx, b.schema.publishWrites(c, m, fields, now, tombstoneTTL)...)
	var outcome error
	*ambiguous, outcome = execOutcome(res, "publish")
	return outcome
}

// publishWrites are the transaction that publishes m (MULTI to EXEC):
// meta with fields and its state as of now, and, unless m failed to load,
// both unit streams and their group afresh and the units' zeroed states;
// then the tombstone, and the live keys' TTLs.
func (sc *schema) publishWrites(c rueidis.DedicatedClient, m Manifest, fields map[string]string, now int64, tombstoneTTL time.Duration) rueidis.Commands {
	k := sc.keys
	cmds := rueidis.Commands{c.B().Multi().Build()}
	metaSet := c.B().Hset().Key(k.Meta).FieldValue()
	for f, v := range fields {
		metaSet = metaSet.FieldValue(f, v)
	}
	readyAt := strconv.FormatInt(now, 10)
	if len(m.LoadErrors) > 0 {
		cmds = append(cmds, metaSet.FieldValue(metaState, stateInitFailed).FieldValue(metaReadyAt, readyAt).Build())
	} else {
		cmds = append(cmds, c.B().Del().Key(k.Units, k.Priority).Build())
		for _, s := range []string{k.Units, k.Priority} {
			cmds = append(cmds, c.B().XgroupCreate().Key(s).Group(Group).Id("0").Mkstream().Build())
		}
		for _, id := range m.serveOrder() {
			cmds = append(cmds, c.B().Xadd().Key(k.Units).Id("*").FieldValue().FieldValue("id", id).FieldValue("type", m.UnitType).Build())
		}
		zero := string(budget.State{}.Encode())
		for start := 0; start < len(m.UnitIDs); start += unitsPerHSET {
			set := c.B().Hset().Key(k.UnitState).FieldValue()
			for _, id := range m.UnitIDs[start:min(start+unitsPerHSET, len(m.UnitIDs))] {
				set = set.FieldValue(id, zero)
			}
			cmds = append(cmds, set.Build())
		}
		cmds = append(cmds, metaSet.
			FieldValue(metaState, stateReady).FieldValue(metaReadyAt, readyAt).
			FieldValue(metaFinalized, "0").FieldValue(metaRequeuedUnits, "0").Build())
	}
	cmds = append(cmds, c.B().Set().Key(k.Exists).Value(tombstoneValue).PxMilliseconds(tombstoneTTL.Milliseconds()).Build())
	for _, key := range k.live() {
		cmds = append(cmds, c.B().Pexpire().Key(key).Milliseconds(m.TTL.Milliseconds()).Build())
	}
	cmds = append(cmds, c.B().Exec().Build())
	return cmds
}
