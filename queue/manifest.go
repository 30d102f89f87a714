package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hopper-queue/hopper/budget"
	"github.com/hopper-queue/hopper/fingerprint"
)

// Defaults of a Manifest.
const (
	// DefaultUnitType is what a unit is when the manifest does not say.
	DefaultUnitType = "file"
	// DefaultTimeout is how long a unit's owner may stay silent before
	// another worker reclaims the unit.
	DefaultTimeout = 180 * time.Second
)

// Manifest is what a build runs, as its publisher freezes it into meta: the
// units in order, what the suite is (its fingerprint), and the budgets every
// worker then enforces. Workers that join read it back with Join or Status.
type Manifest struct {
	// UnitIDs are the build's units, in the order they were given (the
	// order the fingerprint and meta hold). Each is a non-empty UTF-8
	// string of at most MaxIDBytes; no two are equal.
	UnitIDs []string
	// Serve is the order the publisher queues the units in, the same units
	// as UnitIDs; nil means UnitIDs' order. It is the publisher's alone and
	// not kept in meta: joiners with another order (other timings) run the
	// same suite. See docs/design.md#timings.
	Serve []string
	// UnitType is what the units are; empty means DefaultUnitType.
	UnitType string
	// TotalExamples counts the tests the units hold, when known; zero means
	// unknown and is not written (the report then counts units).
	TotalExamples int64
	// LoadErrors are the errors met while listing the units. A manifest with
	// any is published in failure mode: the build's state is init_failed,
	// no unit is queued, and every joiner fails with them.
	LoadErrors []string
	// Seed and Revision are informational: the ordering seed and the source
	// revision under test, when known.
	Seed, Revision string
	// Command is the suite's command as its workers were given it, when
	// known. Informational: the fingerprint holds its digest, and this
	// lets a worker whose suite differs say how (see package fingerprint).
	// One over maxCommandBytes, or not UTF-8, is not recorded.
	Command string
	// Fingerprint identifies the suite (see package fingerprint). Zero means
	// computed from UnitIDs, UnitType and Revision with an empty command.
	// Otherwise its unit_ids, unit_type and revision digests must be those
	// of this manifest.
	Fingerprint fingerprint.Fingerprint
	// Budgets are frozen into meta: every worker's requeue and reclaim
	// decisions read them there.
	Budgets Budgets
	// Timeout is the publisher's reclaim timeout, zero meaning
	// DefaultTimeout. Informational: each worker uses its own.
	Timeout time.Duration
	// TTL is the inactivity TTL the publisher sets on the build's keys, zero
	// meaning the Build's Options.TTL. In meta it is informational: each
	// worker renews with its own.
	TTL time.Duration
}

// TotalUnits is the number of units in the build.
func (m Manifest) TotalUnits() int { return len(m.UnitIDs) }

// Meta field names.
const (
	metaState         = "state"
	metaReadyAt       = "ready_at"
	metaFinalized     = "finalized_count"
	metaRequeuedUnits = "requeued_units_count"
	metaTotalUnits    = "total_units"
	metaTotalExamples = "total_examples"
	metaUnitType      = "unit_type"
	metaUnitIDs       = "unit_ids"
	metaLoadErrors    = "load_errors"
	metaFingerprint   = "fingerprint"
	metaFingerprintIn = "fingerprint_inputs"
	metaSeed          = "seed"
	metaRevision      = "revision"
	metaCommand       = "command"
	maxCommandBytes   = 4096
	metaMaxRequeues   = "max_requeues"
	metaTolerance     = "requeue_tolerance"
	metaMaxReclaims   = "max_reclaims"
	metaTimeout       = "timeout"
	metaTTL           = "ttl"
	metaPublisher     = "publisher"
	metaFileCounts    = "file_counts" // as the transition script's publisher lists units
	metaFileArgs      = "file_args"
	stateReady        = "ready"
	stateInitFailed   = "init_failed"
	tombstoneValue    = "1"
)

// normalized fills in m's defaults (buildTTL for TTL) and checks every value,
// naming the first bad one; nothing has been sent to Redis yet.
func (m Manifest) normalized(buildTTL time.Duration) (Manifest, error) {
	if m.UnitType == "" {
		m.UnitType = DefaultUnitType
	}
	if err := checkID("unit type", m.UnitType); err != nil {
		return m, err
	}
	seen := make(map[string]int, len(m.UnitIDs))
	for i, id := range m.UnitIDs {
		if err := checkID(fmt.Sprintf("unit id #%d", i+1), id); err != nil {
			return m, err
		}
		if j, dup := seen[id]; dup {
			return m, errInvalid("unit id #%d %q repeats unit id #%d", i+1, id, j+1)
		}
		seen[id] = i
	}
	if err := checkServe(m.Serve, seen); err != nil {
		return m, err
	}
	if m.TotalExamples < 0 {
		return m, errInvalid("total examples %d is negative", m.TotalExamples)
	}
	for _, f := range []struct{ what, s string }{{"seed", m.Seed}, {"revision", m.Revision}} {
		if f.s != "" {
			if err := checkID(f.what, f.s); err != nil {
				return m, err
			}
		}
	}
	if err := m.Budgets.check(); err != nil {
		return m, err
	}
	// Meta's counts are read back as at most MaxInt32 (parseManifest): a
	// larger cap, once published, would make every joiner find the build
	// corrupt.
	for _, c := range []struct {
		what string
		n    int
	}{{"max requeues", m.Budgets.MaxRequeues}, {"max reclaims", m.Budgets.MaxReclaims}} {
		if c.n > math.MaxInt32 {
			return m, errInvalid("%s %d is over %d", c.what, c.n, math.MaxInt32)
		}
	}
	if m.Timeout == 0 {
		m.Timeout = DefaultTimeout
	}
	if m.Timeout < time.Millisecond {
		return m, errInvalid("timeout %v is below one millisecond", m.Timeout)
	}
	if m.TTL == 0 {
		m.TTL = buildTTL
	}
	if m.TTL < time.Millisecond {
		return m, errInvalid("TTL %v is below one millisecond", m.TTL)
	}
	own := fingerprint.Of(fingerprint.Inputs{UnitIDs: m.UnitIDs, UnitType: m.UnitType, Revision: m.Revision})
	if m.Fingerprint.IsZero() {
		m.Fingerprint = own
	} else {
		if m.Fingerprint.Sum == "" {
			return m, errInvalid("fingerprint has digests but no sum")
		}
		for _, in := range []string{fingerprint.InputUnitIDs, fingerprint.InputUnitType, fingerprint.InputRevision} {
			if m.Fingerprint.Inputs[in] != own.Inputs[in] {
				return m, errInvalid("fingerprint's %s digest %q is not this manifest's (%s): was it computed from other inputs?",
					in, m.Fingerprint.Inputs[in], own.Inputs[in])
			}
		}
	}
	return m, nil
}

// metaFields returns the fields a publisher writes into meta for m (already
// normalized), state and counters aside.
func (m Manifest) metaFields() map[string]string {
	ids := m.UnitIDs
	if ids == nil {
		ids = []string{}
	}
	loadErrors := m.LoadErrors
	if loadErrors == nil {
		loadErrors = []string{}
	}
	f := map[string]string{
		metaTotalUnits:    strconv.Itoa(len(m.UnitIDs)),
		metaUnitType:      m.UnitType,
		metaUnitIDs:       string(jsonValue(ids)),
		metaLoadErrors:    string(jsonValue(loadErrors)),
		metaFingerprint:   m.Fingerprint.Sum,
		metaFingerprintIn: string(jsonValue(m.Fingerprint.Inputs)),
		metaMaxRequeues:   strconv.Itoa(m.Budgets.MaxRequeues),
		metaTolerance:     strconv.FormatFloat(m.Budgets.RequeueTolerance, 'f', -1, 64),
		metaMaxReclaims:   strconv.Itoa(m.Budgets.MaxReclaims),
		metaTimeout:       seconds(m.Timeout),
		metaTTL:           seconds(m.TTL),
	}
	if m.TotalExamples > 0 {
		f[metaTotalExamples] = strconv.FormatInt(m.TotalExamples, 10)
	}
	if m.Seed != "" {
		f[metaSeed] = m.Seed
	}
	if m.Revision != "" {
		f[metaRevision] = m.Revision
	}
	if m.Command != "" && len(m.Command) <= maxCommandBytes && utf8.ValidString(m.Command) {
		f[metaCommand] = m.Command // informational: one that cannot be kept is left out
	}
	return f
}

// parseManifest reads a manifest back from meta, as ParseMeta read it.
// What hopper's Publish writes is required, whole: meta is only ever
// written whole, by Publish, so anything missing or unreadable is
// corruption.
func parseManifest(pm Meta) (Manifest, error) {
	meta := pm.Fields
	var m Manifest
	for _, field := range []string{metaUnitIDs, metaTotalUnits, metaUnitType} {
		if _, ok := meta[field]; !ok {
			return m, fmt.Errorf("%w: meta lacks %s", ErrCorrupt, field)
		}
	}
	// ParseMeta reads an empty count or list as absent; Publish never
	// writes one.
	for _, field := range []string{metaTotalUnits, metaTotalExamples, metaLoadErrors} {
		if raw, ok := meta[field]; ok && raw == "" {
			return m, badMetaField(meta, field, fmt.Errorf("empty"))
		}
	}
	m.UnitIDs, m.UnitType, m.LoadErrors, m.TotalExamples = pm.UnitIDs, pm.UnitType, pm.LoadErrors, pm.TotalExamples
	if pm.TotalUnits != int64(len(m.UnitIDs)) {
		return m, badMetaField(meta, metaTotalUnits, fmt.Errorf("want %d, the length of unit_ids", len(m.UnitIDs)))
	}
	m.Seed, m.Revision, m.Command = pm.Seed, pm.Revision, meta[metaCommand]
	m.Fingerprint.Sum = pm.Fingerprint
	if raw, ok := meta[metaFingerprintIn]; ok {
		if err := json.Unmarshal([]byte(raw), &m.Fingerprint.Inputs); err != nil {
			return m, badMetaField(meta, metaFingerprintIn, err)
		}
	}
	var err error
	if m.Budgets, err = parseBudgets(meta); err != nil {
		return m, err
	}
	for field, d := range map[string]*time.Duration{metaTimeout: &m.Timeout, metaTTL: &m.TTL} {
		if raw, ok := meta[field]; ok {
			if *d, err = parseSeconds(raw); err != nil {
				return m, badMetaField(meta, field, err)
			}
		}
	}
	return m, nil
}

// badMetaField is the error of a meta field that does not read.
func badMetaField(meta map[string]string, field string, err error) error {
	return fmt.Errorf("%w: meta field %s %.80q: %v", ErrCorrupt, field, meta[field], err)
}

// parseBudgets reads the budgets a publisher froze into meta.
func parseBudgets(meta map[string]string) (Budgets, error) {
	var bg Budgets
	count := func(field string) (int, error) {
		v, ok := budget.Number(meta[field])
		if !ok || v < 0 || v > math.MaxInt32 || v != math.Trunc(v) {
			return 0, badMetaField(meta, field, fmt.Errorf("not a count"))
		}
		return int(v), nil
	}
	var err error
	if bg.MaxRequeues, err = count(metaMaxRequeues); err != nil {
		return bg, err
	}
	if bg.MaxReclaims, err = count(metaMaxReclaims); err != nil {
		return bg, err
	}
	var ok bool
	if bg.RequeueTolerance, ok = budget.Number(meta[metaTolerance]); !ok {
		return bg, badMetaField(meta, metaTolerance, fmt.Errorf("not a number"))
	}
	return bg, nil
}

// parseSeconds reads a duration written by seconds. Rounded, not cut: a
// duration written as decimal seconds reads back as itself. The largest
// durations print above MaxInt64 nanoseconds; they read back as the
// largest, not as a conversion overflowed to a negative one.
func parseSeconds(raw string) (time.Duration, error) {
	v, ok := budget.Number(raw)
	if !ok || v < 0 {
		return 0, fmt.Errorf("not a number of seconds")
	}
	ns := math.Round(v * float64(time.Second))
	if ns >= math.MaxInt64 {
		return math.MaxInt64, nil
	}
	return time.Duration(ns), nil
}

// Equal reports whether m and o describe the same build (every field).
func (m Manifest) Equal(o Manifest) bool {
	return slices.Equal(m.UnitIDs, o.UnitIDs) && m.UnitType == o.UnitType &&
		m.TotalExamples == o.TotalExamples && slices.Equal(m.LoadErrors, o.LoadErrors) &&
		m.Seed == o.Seed && m.Revision == o.Revision &&
		m.Fingerprint.Sum == o.Fingerprint.Sum && maps.Equal(m.Fingerprint.Inputs, o.Fingerprint.Inputs) &&
		m.Budgets == o.Budgets && m.Timeout == o.Timeout && m.TTL == o.TTL
}

// seconds writes a duration the way the command line takes it: 180, 0.5.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// jsonValue encodes v compactly without HTML escaping, as every other JSON
// value of the build is written.
func jsonValue(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("queue: encoding " + err.Error()) // strings, slices and maps of strings always encode
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// checkServe refuses a serve order that is not the manifest's units, each
// once; given maps each unit id to its index in UnitIDs.
func checkServe(serve []string, given map[string]int) error {
	if serve == nil {
		return nil
	}
	if len(serve) != len(given) {
		return errInvalid("serve order has %d units, the manifest %d", len(serve), len(given))
	}
	seen := make(map[string]bool, len(serve))
	for i, id := range serve {
		if _, ok := given[id]; !ok {
			return errInvalid("serve order unit #%d %q is not a unit of the manifest", i+1, id)
		}
		if seen[id] {
			return errInvalid("serve order unit #%d %q repeats", i+1, id)
		}
		seen[id] = true
	}
	return nil
}

// serveOrder is the order Publish queues the units in.
func (m Manifest) serveOrder() []string {
	if m.Serve != nil {
		return m.Serve
	}
	return m.UnitIDs
}
