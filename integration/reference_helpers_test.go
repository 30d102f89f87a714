package integration

// Helpers of reference_test.go: the two sides of a comparison (the reference
// script run through the admin client, and queue.Transition run through the
// client under test), the logical naming of stream entries, and a normalized
// snapshot of a build that can be compared across the two sides.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/queue"
	"github.com/redis/rueidis"
)

// refTTLArg is the ttl_ms every compared transition passes (ttlMS).
const refTTLArg = "600000"

// refTTLMark is the TTL every live key is given after each snapshot (so
// before each operation); a key whose TTL is above refTTLRenewed at the next
// snapshot was renewed by the operation.
const (
	refTTLMark    = 300000
	refTTLRenewed = 450000
)

// loadReference loads the reference script named by HOPPER_REFERENCE_SCRIPT
// with SCRIPT LOAD through the admin client and returns its sha1. It skips
// the test when the variable is unset: the project holds no copy of the
// script.
func loadReference(t *testing.T) string {
	t.Helper()
	path := os.Getenv("HOPPER_REFERENCE_SCRIPT")
	if path == "" {
		t.Skip("HOPPER_REFERENCE_SCRIPT is unset: the reference transition script lives outside the project " +
			"(make exports it when ../shared/reference/transition.lua exists); comparison against it skipped")
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the reference script %s: %v", path, err)
	}
	ctx := context.Background()
	admin := srv.AdminClient(t)
	sha, err := admin.Do(ctx, admin.B().ScriptLoad().Script(string(src)).Build()).ToString()
	if err != nil {
		t.Fatalf("SCRIPT LOAD %s: %v", path, err)
	}
	if os.Getenv("HOPPER_TEST_ACL") != "" {
		// The point of the ACL run: Transition must work for a client that
		// may not run scripts.
		c := srv.Client(t)
		err := c.Do(ctx, c.B().Evalsha().Sha1(sha).Numkeys(0).Build()).Error()
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("HOPPER_TEST_ACL is set, yet the client under test's EVALSHA answered %v, not NOPERM", err)
		}
		t.Logf("client under test is denied scripting (%v)", err)
	}
	return sha
}

// refSide is one build of a comparison and the way transitions are run on it.
type refSide struct {
	name string
	e    *env
	call func(argv []string) ([]any, error)

	toLogical map[string]string // real entry id -> logical name
	toReal    map[string]string // logical name -> real entry id
	nUnits    int               // units entries named so far
	nPrio     int               // priority entries named so far
	// Worker records a scenario wrote by hand: they need not be JSON, nor
	// their last_seen a number, until a transition rewrites them.
	handWritten map[string]bool
	events      map[string]cachedEvent // raw event JSON -> its rendering
}

type cachedEvent struct {
	canon    string
	problems []string
}

// newScriptSide is a build driven by the reference script, run with EVALSHA
// through the admin client (the client under test may be denied scripting).
func newScriptSide(t *testing.T, sha string) *refSide {
	e := newEnv(t)
	s := &refSide{name: "script", e: e, toLogical: map[string]string{}, toReal: map[string]string{}, handWritten: map[string]bool{}}
	s.call = func(argv []string) ([]any, error) {
		cmd := e.admin.B().Evalsha().Sha1(sha).Numkeys(6).Key(e.scriptKeys()...).Arg(argv...).Build()
		return scriptReply(e.admin.Do(e.ctx, cmd))
	}
	return s
}

// newGoSide is a build driven by queue.Transition through the client under
// test.
func newGoSide(t *testing.T) *refSide {
	e := newEnv(t)
	s := &refSide{name: "go", e: e, toLogical: map[string]string{}, toReal: map[string]string{}, handWritten: map[string]bool{}}
	s.call = func(argv []string) ([]any, error) {
		return queue.Transition(e.ctx, e.client, e.scriptKeys(), argv)
	}
	return s
}

// scriptReply converts the script's reply array to Transition's shape:
// string or int64 elements, anything else marked as unexpected.
func scriptReply(res rueidis.RedisResult) ([]any, error) {
	msgs, err := res.ToArray()
	if err != nil {
		return nil, err
	}
	out := make([]any, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.IsInt64():
			v, _ := m.AsInt64()
			out[i] = v
		case m.IsString():
			v, _ := m.ToString()
			out[i] = v
		default:
			out[i] = fmt.Sprintf("<unexpected reply element %v>", m)
		}
	}
	return out, nil
}

// resolve turns an argument naming a logical entry ("@U3", "@P0") into this
// build's real entry id; other arguments pass unchanged.
func (s *refSide) resolve(arg string) (string, error) {
	if !strings.HasPrefix(arg, "@") {
		return arg, nil
	}
	real, ok := s.toReal[arg[1:]]
	if !ok {
		return "", fmt.Errorf("%s build has no entry %s", s.name, arg)
	}
	return real, nil
}

// norm names a real entry id by its logical name ("@U3"); ids the build never
// produced are left as they are (and so differ between the builds).
func (s *refSide) norm(id string) string {
	if l, ok := s.toLogical[id]; ok {
		return "@" + l
	}
	return id
}

func (s *refSide) name2(real, logical string) {
	s.toLogical[real] = logical
	s.toReal[logical] = real
}

// syncNames names the entries of both unit streams not named yet, in
// stream order: U<k> is the k-th entry of units (the published ones first),
// P<k> the k-th entry of units:priority (each requeue adds one). The k-th
// entry is the same logical entry in both builds whatever its time-based id.
func (s *refSide) syncNames() error {
	for _, st := range []struct{ key, prefix string }{{s.e.keys.Units, "U"}, {s.e.keys.Priority, "P"}} {
		entries, err := xrangeRaw(s.e, st.key)
		if err != nil {
			return err
		}
		s.nameNew(entries, st.prefix)
	}
	return nil
}

// nameNew names the entries of one stream ("U" units, "P" priority) that
// have no name yet.
func (s *refSide) nameNew(entries []rawEntry, prefix string) {
	n := &s.nUnits
	if prefix == "P" {
		n = &s.nPrio
	}
	for _, x := range entries {
		if _, ok := s.toLogical[x.id]; !ok {
			s.name2(x.id, prefix+strconv.Itoa(*n))
			*n++
		}
	}
}

// resetTTLs sets every live key's TTL to refTTLMark, below what transitions
// set, so that the next snapshot tells which keys a transition renewed.
func (s *refSide) resetTTLs() error {
	k := s.e.keys
	cmds := make([]rueidis.Completed, 0, 6)
	for _, key := range []string{k.Units, k.Priority, k.Attempts, k.Meta, k.UnitState, k.Workers} {
		cmds = append(cmds, s.e.admin.B().Pexpire().Key(key).Milliseconds(refTTLMark).Build())
	}
	for _, res := range s.e.admin.DoMulti(s.e.ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

// rawEntry is a stream entry with its fields in stored order.
type rawEntry struct {
	id     string
	fields []string // field, value, field, value...
}

func (x rawEntry) field(name string) (string, bool) {
	for i := 0; i+1 < len(x.fields); i += 2 {
		if x.fields[i] == name {
			return x.fields[i+1], true
		}
	}
	return "", false
}

func xrangeRaw(e *env, key string) ([]rawEntry, error) {
	return parseXRangeRaw(e.admin.Do(e.ctx, e.admin.B().Xrange().Key(key).Start("-").End("+").Build()))
}

func parseXRangeRaw(res rueidis.RedisResult) ([]rawEntry, error) {
	msgs, err := res.ToArray()
	if err != nil {
		return nil, err
	}
	out := make([]rawEntry, 0, len(msgs))
	for _, m := range msgs {
		parts, err := m.ToArray()
		if err != nil || len(parts) != 2 {
			return nil, fmt.Errorf("unexpected XRANGE entry %v", m)
		}
		id, err := parts[0].ToString()
		if err != nil {
			return nil, err
		}
		var fields []string
		if !parts[1].IsNil() {
			if fields, err = parts[1].AsStrSlice(); err != nil {
				return nil, err
			}
		}
		out = append(out, rawEntry{id: id, fields: fields})
	}
	return out, nil
}

// renderReply renders a reply element by element with its Go type, entry ids
// replaced by logical names: `string "OK"`, `int64 3`.
func (s *refSide) renderReply(reply []any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	parts := make([]string, len(reply))
	for i, v := range reply {
		switch x := v.(type) {
		case string:
			parts[i] = "string " + strconv.Quote(s.norm(x))
		default:
			parts[i] = fmt.Sprintf("%T %v", v, v)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// ---------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------

// refPending is one pending entry, by logical id.
type refPending struct {
	stream   queue.Stream
	consumer string
	count    int64
}

// refSnap is a build's state, normalized so that the two builds compare:
// logical entry ids, no idle times, at_ms and last_seen masked (once checked
// to be numbers), JSON compared by decoded value with key order kept.
type refSnap struct {
	sections map[string][]string
	problems []string // checks of one build alone that failed (TTLs, numbers)

	// For the operation generator.
	pending map[string]refPending // logical entry -> row
	fields  map[string]rawEntry   // logical entry -> stream entry
}

var refSections = []string{
	"keys", "units", "units:priority", "pending units", "pending units:priority",
	"stream info", "meta", "unit_state", "workers", "attempts",
}

// snapshot reads the build's state in one round trip and names entries not
// named yet (see syncNames). With resetAfter, the same round trip then sets
// every live key's TTL to refTTLMark, for the next snapshot to tell which
// keys the next operation renewed.
func (s *refSide) snapshot(resetAfter bool) (refSnap, error) {
	e, k := s.e, s.e.keys
	c := e.admin
	snap := refSnap{sections: map[string][]string{}, pending: map[string]refPending{}, fields: map[string]rawEntry{}}
	add := func(sec, line string) { snap.sections[sec] = append(snap.sections[sec], line) }
	problem := func(format string, args ...any) {
		snap.problems = append(snap.problems, fmt.Sprintf(format, args...))
	}

	live := []struct{ short, key string }{
		{"units", k.Units}, {"units:priority", k.Priority}, {"attempts", k.Attempts},
		{"meta", k.Meta}, {"unit_state", k.UnitState}, {"workers", k.Workers},
	}
	cmds := make(rueidis.Commands, 0, 20)
	for _, l := range live {
		cmds = append(cmds, c.B().Pttl().Key(l.key).Build())
	}
	cmds = append(cmds,
		c.B().Xrange().Key(k.Units).Start("-").End("+").Build(),                                       // 6
		c.B().Xrange().Key(k.Priority).Start("-").End("+").Build(),                                    // 7
		c.B().Xpending().Key(k.Units).Group(queue.Group).Start("-").End("+").Count(100000).Build(),    // 8
		c.B().Xpending().Key(k.Priority).Group(queue.Group).Start("-").End("+").Count(100000).Build(), // 9
		c.B().Hgetall().Key(k.Meta).Build(),                                                           // 10
		c.B().Hgetall().Key(k.UnitState).Build(),                                                      // 11
		c.B().Hgetall().Key(k.Workers).Build(),                                                        // 12
		c.B().Xrange().Key(k.Attempts).Start("-").End("+").Build(),                                    // 13
		c.B().XinfoStream().Key(k.Units).Build(),                                                      // 14
		c.B().XinfoStream().Key(k.Priority).Build(),                                                   // 15
		c.B().XinfoGroups().Key(k.Units).Build(),                                                      // 16
		c.B().XinfoGroups().Key(k.Priority).Build(),                                                   // 17
	)
	if resetAfter {
		for _, l := range live {
			cmds = append(cmds, c.B().Pexpire().Key(l.key).Milliseconds(refTTLMark).Build())
		}
	}
	res := e.admin.DoMulti(e.ctx, cmds...)
	for _, r := range res[18:] {
		if err := r.Error(); err != nil {
			return snap, fmt.Errorf("PEXPIRE: %w", err)
		}
	}
	for i, prefix := range []string{"U", "P"} {
		entries, err := parseXRangeRaw(res[6+i])
		if err != nil {
			continue // reported below
		}
		s.nameNew(entries, prefix)
	}

	// Keys: existence compared, TTL checked on each build alone.
	for i, l := range live {
		ttl, err := res[i].AsInt64()
		if err != nil {
			return snap, fmt.Errorf("PTTL %s: %w", l.key, err)
		}
		if ttl == -2 {
			add("keys", l.short+" missing")
			continue
		}
		switch {
		case ttl <= 0 || ttl > ttlMS:
			add("keys", l.short+" exists")
			problem("%s build: key %s has TTL %d ms, want 0 < TTL <= %d", s.name, l.short, ttl, ttlMS)
		case ttl > refTTLRenewed:
			add("keys", l.short+" exists, TTL renewed")
		default:
			add("keys", l.short+" exists, TTL not renewed")
		}
	}

	// Unit streams: every entry, fields in order.
	for i, sec := range []string{"units", "units:priority"} {
		entries, err := parseXRangeRaw(res[6+i])
		if err != nil {
			add(sec, "error: "+err.Error())
			continue
		}
		for _, x := range entries {
			snap.fields[s.norm(x.id)] = x
			q := make([]string, len(x.fields))
			for j, f := range x.fields {
				q[j] = strconv.Quote(f)
			}
			add(sec, s.norm(x.id)+" "+strings.Join(q, " "))
		}
	}

	// Pending entries: logical id, consumer, delivery count; not idle time.
	for i, st := range []queue.Stream{queue.StreamUnits, queue.StreamPriority} {
		sec := "pending " + string(st)
		rows, err := res[8+i].ToArray()
		if err != nil {
			add(sec, "error: "+err.Error())
			continue
		}
		for _, r := range rows {
			f, err := r.ToArray()
			if err != nil || len(f) != 4 {
				add(sec, fmt.Sprintf("unexpected row %v", r))
				continue
			}
			id, _ := f[0].ToString()
			consumer, _ := f[1].ToString()
			count, _ := f[3].AsInt64()
			add(sec, fmt.Sprintf("%s consumer=%q count=%d", s.norm(id), consumer, count))
			snap.pending[s.norm(id)] = refPending{stream: st, consumer: consumer, count: count}
		}
	}

	// Stream and group metadata that transitions can change.
	for i, st := range []string{"units", "units:priority"} {
		info, err := res[14+i].AsMap()
		if err != nil {
			add("stream info", st+" error: "+err.Error())
		} else {
			for _, f := range []string{"length", "last-generated-id", "max-deleted-entry-id", "entries-added"} {
				v, ok := info[f]
				if !ok {
					continue
				}
				add("stream info", fmt.Sprintf("%s %s=%s", st, f, s.infoValue(v)))
			}
		}
		groups, err := res[16+i].ToArray()
		if err != nil {
			add("stream info", st+" groups error: "+err.Error())
			continue
		}
		for _, g := range groups {
			m, err := g.AsMap()
			if err != nil {
				continue
			}
			for _, f := range []string{"name", "consumers", "pending", "last-delivered-id", "entries-read", "lag"} {
				if v, ok := m[f]; ok {
					add("stream info", fmt.Sprintf("%s group %s=%s", st, f, s.infoValue(v)))
				}
			}
		}
	}

	// Hashes.
	for i, sec := range []string{"meta", "unit_state", "workers"} {
		m, err := res[10+i].AsStrMap()
		if err != nil {
			add(sec, "error: "+err.Error())
			continue
		}
		fields := make([]string, 0, len(m))
		for f := range m {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, f := range fields {
			v := m[f]
			if sec == "workers" {
				v = s.canonWorker(f, v, problem)
			} else {
				v = strconv.Quote(v)
			}
			add(sec, strconv.Quote(f)+" = "+v)
		}
	}

	// The attempt log: each event decoded, key order kept.
	entries, err := parseXRangeRaw(res[13])
	if err != nil {
		add("attempts", "error: "+err.Error())
	}
	for n, x := range entries {
		if len(x.fields) != 2 || x.fields[0] != "json" {
			add("attempts", fmt.Sprintf("entry with fields %q", x.fields))
			continue
		}
		raw := x.fields[1]
		c, ok := s.events[raw]
		if !ok {
			// An event never changes once appended: decode each once.
			var probs []string
			c.canon = s.canonEvent(n, raw, func(format string, args ...any) {
				probs = append(probs, fmt.Sprintf(format, args...))
			})
			c.problems = probs
			if s.events == nil {
				s.events = map[string]cachedEvent{}
			}
			s.events[raw] = c
		}
		snap.problems = append(snap.problems, c.problems...)
		add("attempts", c.canon)
	}
	return snap, nil
}

func (s *refSide) infoValue(v rueidis.RedisMessage) string {
	if v.IsNil() {
		return "nil"
	}
	if n, err := v.AsInt64(); err == nil && v.IsInt64() {
		return strconv.FormatInt(n, 10)
	}
	if str, err := v.ToString(); err == nil {
		return s.norm(str)
	}
	return fmt.Sprint(v)
}

// canonWorker renders a worker record with last_seen masked, after checking
// that it is JSON with a number there (unless a scenario wrote it by hand).
func (s *refSide) canonWorker(worker, raw string, problem func(string, ...any)) string {
	n, err := parseOrderedJSON(raw)
	if err != nil {
		if !s.handWritten[raw] {
			problem("%s build: worker %q record %q is not JSON: %v", s.name, worker, raw, err)
		}
		return "invalid JSON " + strconv.Quote(raw)
	}
	if n.kind != 'o' {
		return "not an object: " + n.canon()
	}
	for i, key := range n.keys {
		if key == "last_seen" {
			if n.vals[i].kind != 'n' && !s.handWritten[raw] {
				problem("%s build: worker %q last_seen is not a number: %s", s.name, worker, raw)
				continue
			}
			n.vals[i] = &jnode{kind: 'm', str: "<number>"}
		}
	}
	return n.canon()
}

// canonEvent renders an attempt-log event: at_ms masked (after checking it is
// a number), entry_id and new_entry_id named logically.
func (s *refSide) canonEvent(index int, raw string, problem func(string, ...any)) string {
	n, err := parseOrderedJSON(raw)
	if err != nil {
		problem("%s build: event %d is not JSON: %v: %s", s.name, index, err, raw)
		return "invalid JSON " + strconv.Quote(raw)
	}
	if n.kind != 'o' {
		return "not an object: " + n.canon()
	}
	for i, key := range n.keys {
		v := n.vals[i]
		switch key {
		case "at_ms":
			if v.kind != 'n' {
				problem("%s build: event %d at_ms is not a number: %s", s.name, index, raw)
				continue
			}
			n.vals[i] = &jnode{kind: 'm', str: "<ms>"}
		case "entry_id", "new_entry_id":
			if v.kind == 's' {
				v.str = s.norm(v.str)
			}
		}
	}
	return n.canon()
}

// ---------------------------------------------------------------------------
// Order-keeping JSON
// ---------------------------------------------------------------------------

// jnode is a decoded JSON value that keeps object key order and duplicate
// keys. Kinds: o object, a array, s string, n number, b boolean, z null, m a
// masked value (rendered as is).
type jnode struct {
	kind byte
	str  string
	b    bool
	keys []string
	vals []*jnode
}

func parseOrderedJSON(raw string) (*jnode, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	n, err := parseJNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the value")
	}
	return n, nil
}

func parseJNode(dec *json.Decoder) (*jnode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			n := &jnode{kind: 'o'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				val, err := parseJNode(dec)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, val)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '[':
			n := &jnode{kind: 'a'}
			for dec.More() {
				val, err := parseJNode(dec)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, val)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
		return nil, fmt.Errorf("unexpected %v", v)
	case string:
		return &jnode{kind: 's', str: v}, nil
	case json.Number:
		return &jnode{kind: 'n', str: v.String()}, nil
	case bool:
		return &jnode{kind: 'b', b: v}, nil
	case nil:
		return &jnode{kind: 'z'}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// canon renders the value; numbers by value (1250 and 1250.0 are equal),
// strings decoded (so "\/" and "/" are equal), key order kept.
func (n *jnode) canon() string {
	var b strings.Builder
	n.write(&b)
	return b.String()
}

func (n *jnode) write(b *strings.Builder) {
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			n.vals[i].write(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			v.write(b)
		}
		b.WriteByte(']')
	case 's':
		b.WriteString(strconv.Quote(n.str))
	case 'n':
		if f, err := strconv.ParseFloat(n.str, 64); err == nil {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		} else {
			b.WriteString("number(" + n.str + ")")
		}
	case 'b':
		b.WriteString(strconv.FormatBool(n.b))
	case 'z':
		b.WriteString("null")
	case 'm':
		b.WriteString(n.str)
	}
}

// ---------------------------------------------------------------------------
// Diffs
// ---------------------------------------------------------------------------

// diffSnaps describes how two snapshots differ, section by section, as a
// line diff (- script, + go); "" when they are equal.
func diffSnaps(a, b refSnap) string { return diffSnapsAs(a, b, "- script, + go") }

func diffSnapsAs(a, b refSnap, legend string) string {
	var out strings.Builder
	for _, sec := range refSections {
		x, y := a.sections[sec], b.sections[sec]
		if equalLines(x, y) {
			continue
		}
		fmt.Fprintf(&out, "  section %s (%s):\n", sec, legend)
		out.WriteString(lineDiff(x, y, "    "))
	}
	return out.String()
}

func equalLines(x, y []string) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// lineDiff is a longest-common-subsequence diff of two short line lists,
// with runs of more than four equal lines collapsed.
func lineDiff(x, y []string, indent string) string {
	n, m := len(x), len(y)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			lines = append(lines, line{' ', x[i]})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			lines = append(lines, line{'+', y[j]})
			j++
		default:
			lines = append(lines, line{'-', x[i]})
			i++
		}
	}
	keep := make([]bool, len(lines))
	for k, l := range lines {
		if l.op == ' ' {
			continue
		}
		for d := -2; d <= 2; d++ {
			if k+d >= 0 && k+d < len(lines) {
				keep[k+d] = true
			}
		}
	}
	var out strings.Builder
	for k := 0; k < len(lines); k++ {
		if !keep[k] {
			skipped := 0
			for k < len(lines) && !keep[k] {
				skipped++
				k++
			}
			fmt.Fprintf(&out, "%s  ... %d equal lines\n", indent, skipped)
			k--
			continue
		}
		out.WriteString(indent + string(lines[k].op) + " " + lines[k].text + "\n")
	}
	return out.String()
}
