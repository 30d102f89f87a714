package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/hopper-queue/hopper/queue/internal/reclaim"
	"github.com/redis/rueidis"
)

// firstLook is what a reclaim reads unwatched, in one round trip: usually
// nothing is idle and nothing was deleted, and that is all it costs.
type firstLook struct {
	scans       []streamScan
	anyCand     bool             // some stream has an idle candidate
	looked      map[entryAt]bool // entries whose fate the walk must read: the second look ranges them
	maxReclaims float64
}

// firstLook reads meta's presence (and its guarded mark, for Transition:
// see meta.go) and max reclaims, the scans, the
// entries an earlier first look found and whose units are not known (see
// entry_units.go), and the server's consumer policy while it is not known
// (see machinery.ConsumerPolicy).
func (r *reclaimer) firstLook() (firstLook, error) {
	e, c := r.e, r.c
	cmds, learning := e.firstLookCmds(c, r.timeoutMS)
	info, probing := e.eng.Consumers.Probe(c)
	if probing {
		cmds = append(cmds, info)
	}
	sent := time.Now()
	res := c.DoMulti(r.ctx, cmds...)
	if probing {
		e.eng.Consumers.Learn(res[len(res)-1])
	}
	return r.parseFirstLook(res, learning, sent)
}

// firstLookCmds are the first look's reads, the consumer policy's probe
// aside; learning are the entries it ranges. A read-ahead sends them
// behind a settlement's EXEC (read_ahead.go).
func (e *core) firstLookCmds(c rueidis.DedicatedClient, timeoutMS int64) (rueidis.Commands, []entryAt) {
	cmds := append(rueidis.Commands{
		e.schema.metaRead(c),
		c.B().Hget().Key(e.schema.keys.Meta).Field("max_reclaims").Build(),
	}, e.schema.scanCmds(c, timeoutMS)...)
	learning := e.entries.toRange()
	for _, at := range learning {
		cmds = append(cmds, e.schema.xrangeEntry(c, at))
	}
	return cmds, learning
}

// parseFirstLook reads the replies of firstLookCmds, sent at sent, and
// tells the Build's reclaim pace whether the look was quiet.
func (r *reclaimer) parseFirstLook(res []rueidis.RedisResult, learning []entryAt, sent time.Time) (firstLook, error) {
	e := r.e
	for i, at := range learning {
		e.entries.learnRanged(at, res[2+scanReplies+i])
	}
	if found, err := e.schema.metaFound(res[0]); err != nil {
		return firstLook{}, err
	} else if !found {
		return firstLook{}, fmt.Errorf("%w: meta is missing or holds no state (reclaim by %q)", ErrCorrupt, r.worker)
	}
	scans, err := parseScans(res[2 : 2+scanReplies])
	if err != nil {
		return firstLook{}, err
	}
	e.entries.saw(scans)
	f := firstLook{scans: scans, looked: map[entryAt]bool{}}
	for _, sc := range scans {
		f.anyCand = f.anyCand || sc.hasCnd
		for _, row := range sc.undecided(r.timeoutMS) {
			f.looked[entryAt{sc.stream, row.EntryID}] = true
		}
	}
	maxRaw, maxOK := optionalStringOK(res[1])
	f.maxReclaims = budget.Frozen(maxRaw, maxOK, r.fallbackMax)
	e.eng.Reclaims.Looked(r.timeoutMS, sent, !f.anyCand && len(f.looked) == 0)
	return f, nil
}

// secondLook is the read a reclaim's decision stands on, made under WATCH
// (see watchFor and package reclaim): the scans again, the entries the walk needs, the
// reclaimer's record, the time, and the states of the units it may claim
// when their entries' units are known.
type secondLook struct {
	scans      []streamScan
	fields     map[entryAt]entryFields // the entries ranged
	prefetch   []string                // the units whose states were read
	prefetched map[string]string       // their states, missing ones left out
	rec        workerRecord
	recErr     error // why rec could not be decoded
	now        int64
}

func (r *reclaimer) secondLook(first firstLook) (secondLook, error) {
	e, c, k := r.e, r.c, r.e.schema.keys
	w := watchFor(k, r.wguard, first)
	cmds := rueidis.Commands{c.B().Watch().Key(w.Keys...).Build()}
	cmds = append(cmds, e.schema.scanCmds(c, r.timeoutMS)...)
	for _, at := range w.Ranged {
		cmds = append(cmds, e.schema.xrangeEntry(c, at))
	}
	cmds = append(cmds, c.B().Hget().Key(k.Workers).Field(r.worker).Build(), c.B().Time().Build())
	prefetch := e.prefetchUnits(first.scans, w.Ranged, r.timeoutMS)
	if len(prefetch) > 0 {
		cmds = append(cmds, c.B().Hmget().Key(k.UnitState).Field(prefetch...).Build())
	}
	return r.parseSecondLook(c.DoMulti(r.ctx, cmds...), w, prefetch)
}

// prefetchUnits are the units whose states the second look reads: those
// of the entries ranged whose units are known, and which the claim may
// stand on. They save the round trip of unitStates. Only idle entries are
// claimed, and only idle candidates have their state checked.
func (e *core) prefetchUnits(scans []streamScan, ranged []entryAt, timeoutMS int64) []string {
	var units []string
	for _, at := range ranged {
		if u, ok := e.entries.unit(at); ok && mayClaim(scans, at, timeoutMS) && !slices.Contains(units, u) {
			units = append(units, u)
		}
	}
	return units
}

// watchFor is the watch set of the second look after first: the worker's
// guard, the candidates and the entries first looked at, ranged, and
// every entry of the windows (docs/design.md#reclaim-watch).
func watchFor(k Keys, workerGuard string, first firstLook) *reclaim.WatchSet[entryAt] {
	guard := func(at entryAt) string { return k.entryGuard(at.stream, at.id) }
	w := reclaim.NewWatchSet(workerGuard, guard, entryGuards)
	for _, sc := range first.scans {
		if sc.hasCnd {
			w.Range(entryAt{sc.stream, sc.cand.EntryID})
		}
		for _, row := range sc.window {
			w.Watch(entryAt{sc.stream, row.EntryID})
		}
	}
	for at := range first.looked {
		w.Range(at)
	}
	return w
}

// scannedEntries are the entries of the scans' windows and their
// candidates: when the second look's watch set covers them all, no entry
// can leave a window, or stop being its stream's candidate by being
// settled, without aborting the commit.
func scannedEntries(scans []streamScan) []entryAt {
	var out []entryAt
	for _, sc := range scans {
		if sc.hasCnd {
			out = append(out, entryAt{sc.stream, sc.cand.EntryID})
		}
		for _, row := range sc.window {
			out = append(out, entryAt{sc.stream, row.EntryID})
		}
	}
	return out
}

func (r *reclaimer) parseSecondLook(res []rueidis.RedisResult, w *reclaim.WatchSet[entryAt], prefetch []string) (s secondLook, err error) {
	if err := res[0].Error(); err != nil {
		return s, err
	}
	if s.scans, err = parseScans(res[1 : 1+scanReplies]); err != nil {
		return s, err
	}
	if !w.Covers(scannedEntries(s.scans)) {
		return s, errRetry // the windows moved before the WATCH: look again
	}
	s.fields = make(map[entryAt]entryFields, len(w.Ranged))
	pos := 1 + scanReplies
	for _, at := range w.Ranged {
		s.fields[at] = r.e.entries.learnRanged(at, res[pos])
		pos++
	}
	s.prefetch, s.prefetched = prefetch, map[string]string{}
	if len(prefetch) > 0 {
		if s.prefetched, err = hmgetStates(prefetch, res[pos+2]); err != nil {
			return s, err
		}
	}
	raw, found, err := optionalString(res[pos])
	if err != nil {
		return s, err
	}
	// A reclaimer's record that is not JSON fails the reclaim only where
	// the reclaim would write it: nothing idle (NONE) and a candidate
	// whose state is missing (CORRUPT) come first.
	s.rec, s.recErr = parseWorkerRecord(raw, found)
	if s.now, err = machinery.ParseTime(res[pos+1]); err != nil {
		return s, err
	}
	return s, nil
}

// unitStates returns the unit_state of units (missing ones are left out).
// The states of the units in read were read already, as prefetched; the
// others cost a round trip.
func (e *core) unitStates(ctx context.Context, c rueidis.DedicatedClient, units, read []string, prefetched map[string]string) (map[string]string, error) {
	var rest []string
	for _, u := range units {
		if !slices.Contains(read, u) && !slices.Contains(rest, u) {
			rest = append(rest, u)
		}
	}
	if len(rest) == 0 {
		return prefetched, nil
	}
	states, err := hmgetStates(rest, c.Do(ctx, c.B().Hmget().Key(e.schema.keys.UnitState).Field(rest...).Build()))
	if err != nil {
		return nil, err
	}
	for u, s := range prefetched {
		states[u] = s
	}
	return states, nil
}
