package integration

// Differential tests: queue.Transition against the reference transition script
// (HOPPER_REFERENCE_SCRIPT, kept outside the project), on two builds published
// identically and driven by the same long random sequences of operations.
//
// Build A runs the script with EVALSHA through the admin client; build B runs
// queue.Transition through the client under test, which with HOPPER_TEST_ACL
// set is denied every scripting command. After every operation the replies
// (entry ids renamed logically, element types compared) and the whole
// normalized state of both builds must be equal.
//
// Logical entry names: "@U<k>" is the k-th entry of the units stream as
// published, "@P<k>" the k-th entry the builds added to units:priority (each
// requeue adds one). Each build maps them to its own time-based ids, learnt
// from Redis itself (XRANGE of the streams after every operation), so an id a
// transition reports but never wrote stays unnamed and shows up in the diff.
//
// Exceptions, deliberately not compared:
//   - guard keys (":fence:" in their names) exist in build B only; only the
//     six live keys are read;
//   - JSON is compared decoded, key order kept: the script's cjson writes "/"
//     as "\/", and numbers print differently (1250 vs 1250.0 are equal);
//   - at_ms and last_seen are only checked to be numbers; idle times of
//     pending entries are not compared; TTLs are checked positive (and at
//     most ttl_ms) on each build, and what is compared is whether the
//     operation renewed each key (every snapshot lowers all TTLs to a mark);
//   - inputs that Transition refuses by design before touching Redis (invalid
//     JSON in errors, an unknown outcome or mode, counts below 1, an empty
//     unit type...) are never generated: the script would error half-way or
//     write a corrupt log. Nor are prebuilt payloads ending in whitespace,
//     which Transition trims and the script refuses. TestReferenceErrors
//     compares error against error where both refuse.
//
// Random operations: reads (plain XREADGROUP, priority first) and delivery
// accounting, heartbeat, finalize, requeue, abandoned, liveness, reclaim with
// timeout 0 (deterministic: every pending entry is idle enough) or an hour
// (NONE), worker_error and stale_rejected; aimed at valid reservations, old
// ones, or spoilt ones (other worker, other delivery count, other stream,
// another unit, an entry never delivered or that no build has); budgets
// frozen in meta or left out of it; and, rarely, a unit's unit_state field
// deleted, a pending entry deleted from its stream (XDEL) and meta deleted
// near the end. TestReferenceScenarios scripts the rare paths.
//
// Environment: HOPPER_REFERENCE_SEED replays one sequence;
// HOPPER_REFERENCE_SEQUENCES and HOPPER_REFERENCE_OPS change the default 20
// sequences of 150 operations; HOPPER_REFERENCE_XDEL=0 leaves out the
// deletion of pending entries (see the "reclaim: deleted entry" scenarios) to
// look for other differences.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
)

func TestReferenceTransitions(t *testing.T) {
	sha := loadReference(t)
	runSequences(t, "HOPPER_REFERENCE", 20, 150, func(t *testing.T, seed uint64, cov *refCoverage) *refRun {
		return newRefRun(t, sha, seed, cov)
	})
}

// runSequences runs random sequences in parallel, each on builds of its
// own made by newRun, and logs what they compared. The environment
// variables prefix_SEED (one sequence to replay), prefix_SEQUENCES and
// prefix_OPS (defaults seqs and ops) tune it.
func runSequences(t *testing.T, prefix string, seqs, ops int, newRun func(*testing.T, uint64, *refCoverage) *refRun) {
	seqs, ops = envInt(t, prefix+"_SEQUENCES", seqs), envInt(t, prefix+"_OPS", ops)
	seeds := seedsFrom(t, prefix+"_SEED", seqs)
	cov := &refCoverage{counts: map[string]int{}}
	start := time.Now()
	t.Run("sequences", func(t *testing.T) { // returns once every sequence is done
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				t.Logf("seed %d: replay with %s_SEED=%d", seed, prefix, seed)
				r := newRun(t, seed, cov)
				r.label = fmt.Sprintf("seed %d (replay: %s_SEED=%d)", seed, prefix, seed)
				r.run(ops)
			})
		}
	})
	cov.report(t, len(seeds), time.Since(start))
}

// report logs how many sequences and operations were compared, and each
// operation's replies seen, by build A's reply status.
func (c *refCoverage) report(t *testing.T, seqs int, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("%d sequences, %d operations compared (replies and full state after each) in %v",
		seqs, c.ops, took.Round(time.Millisecond))
	keys := make([]string, 0, len(c.counts))
	for k := range c.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-40s %d", k, c.counts[k])
	}
	t.Logf("replies seen (operation -> build A's reply status):%s", b.String())
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q is not a positive integer", name, s)
	}
	return n
}

type refCoverage struct {
	mu     sync.Mutex
	ops    int
	counts map[string]int
}

func (c *refCoverage) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops++
	c.counts[key]++
}

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

type refOpKind int

const (
	refTransition refOpKind = iota // argv, entry arguments as "@U3"
	refRead                        // plain XREADGROUP by worker, priority first
	refHDelState                   // HDEL unit_state <unit>
	refXDel                        // XDEL <stream> <entry>
	refDelMeta                     // DEL meta
	refRaw                         // any command on both builds: argv, keys as "{meta}", entries as "@U3"
)

type refOp struct {
	kind   refOpKind
	worker string
	argv   []string
	unit   string
	stream queue.Stream
	entry  string
	note   string // why the generator chose it (valid, stale: other worker...)
}

func (op refOp) String() string {
	var s string
	switch op.kind {
	case refTransition:
		q := make([]string, len(op.argv))
		for i, a := range op.argv {
			if strings.HasPrefix(a, "@") || (a != "" && !strings.ContainsAny(a, " \"\\{[")) {
				q[i] = a
			} else {
				q[i] = strconv.Quote(a)
			}
		}
		s = "Transition " + strings.Join(q, " ")
	case refRead:
		s = "XREADGROUP by " + op.worker + " (priority, then units)"
	case refHDelState:
		s = "HDEL unit_state " + strconv.Quote(op.unit) + " (both builds)"
	case refXDel:
		s = "XDEL " + string(op.stream) + " " + op.entry + " (both builds)"
	case refDelMeta:
		s = "DEL meta (both builds)"
	case refRaw:
		s = strings.Join(op.argv, " ") + " (both builds)"
	}
	if op.note != "" {
		s += "   [" + op.note + "]"
	}
	return s
}

// refTicket is what a worker believes it holds.
type refTicket struct {
	worker string
	stream queue.Stream
	entry  string // "@U3", or a literal id no build has
	unit   string
	typ    string
	count  int64
}

var (
	refEntryID   = regexp.MustCompile(`\b\d{13}-\d+\b`)
	refWorkers   = []string{"w1", "w2", "w3", "w4"}
	refUnitNames = []string{
		"./spec/a_spec.rb", "./spec/models/user_spec.rb", "spec/ünï_spec.rb", `spec/quote"d_spec.rb`,
		"b", "c", "lib/x<y>&z_spec.rb", "u7", "spec/features/deep/nested/path_spec.rb",
	}
	refDurations = []string{"0", "12", "1250", "3.5", "", "0.25", "86400000", "7"}
	refElapsed   = []string{"900123", "0", "", "12.5", "60000"}
	refReasons   = []string{"", "test_failure", "", "timeout/killed"}
	refSummaries = []string{"", "1 failure", "boom/ü <b> & \"q\"", ""}
	refErrors    = []string{
		"",
		`[{"example_id":"./spec/a_spec.rb[1:1]","description":"a <b> & c/d","class":"RSpec::Expectations::ExpectationNotMetError","message":"expected: 1\n     got: 2","backtrace":["./spec/a_spec.rb:3:in 'block (2 levels)'"]}]`,
		`[]`,
		"",
		`{"k":[1,2.5,true,null,-0.5e3],"s":"\u00e9\/x","nested":{"z":1,"a":2}}`,
		` [ {"class" : "E", "message": "spaced"} ] `,
		`"just a string"`,
		`null`,
	}
	refTolerances = []string{"0", "0.5", "1", "0.25"}
)

func (r *refRun) prebuiltPayloads() []string {
	u := r.units[r.rng.IntN(len(r.units))]
	uq := strconv.Quote(u)
	return []string{
		`{}`,
		`{"type":"worker_error","worker_id":"w1","phase":"boot","unit_id":null,"class":"LoadError","message":"cannot load ./x/y","backtrace":[]}`,
		`{"type":"stale_rejected","unit_id":` + uq + `,"worker_id":"w2","retry_index":0,"reclaim_count":1,"ownership_generation":2,"operation":"finalize","stream":"units","entry_id":"1-0","delivery_count":1}`,
		`{ }`,
		"  {\"nested\":{\"a\":[1,{\"b\":\"c/d\"}]},\"unit_id\":" + uq + "}",
		`{"type":"worker_error","at_ms":1}`,
		"{\n}",
		`{"type":"worker_error","message":"space before the brace" }`,
	}
}

// ---------------------------------------------------------------------------
// One sequence
// ---------------------------------------------------------------------------

type refRun struct {
	t     *testing.T
	seed  uint64
	label string // how a failure names the sequence (its seed, or the scenario)
	rng   *rand.Rand
	a, b  *refSide
	cov   *refCoverage

	units   []string
	tickets []refTicket
	snap    refSnap // build A's state after the last operation (equal to B's)
	history []string
	index   int
	drained bool // the last read found nothing, and nothing was requeued since

	// Corruption, scheduled per sequence: operation indexes at which a
	// unit's unit_state field is deleted, a pending entry is deleted from its
	// stream, and meta is deleted (near the end).
	hdelAt, xdelAt []int
	delMetaAt      int
}

func newRefRun(t *testing.T, sha string, seed uint64, cov *refCoverage) *refRun {
	return newRefRunOn(t, newScriptSide(t, sha), newGoSide(t), seed, cov)
}

// newRefRunOn is a random sequence of seed run on builds a and b.
func newRefRunOn(t *testing.T, a, b *refSide, seed uint64, cov *refCoverage) *refRun {
	r := &refRun{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), cov: cov,
		a: a, b: b, delMetaAt: -1,
		label: fmt.Sprintf("seed %d (replay: HOPPER_REFERENCE_SEED=%d)", seed, seed),
	}
	// Units: some with names that JSON encoders treat differently, the rest
	// plain; in random order.
	names := slices.Clone(refUnitNames)
	for i := range 12 {
		names = append(names, fmt.Sprintf("spec/gen/unit_%02d_spec.rb", i))
	}
	r.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	units := names[:6+r.rng.IntN(13)]
	// Budgets frozen into meta; sometimes left out, so that the caller's own
	// values are the fallback.
	meta := map[string]string{
		"max_requeues":      r.pick([]string{"0", "1", "2", "2"}),
		"requeue_tolerance": r.pick([]string{"0", "0.5", "1", "1"}),
		"max_reclaims":      r.pick([]string{"0", "1", "2", "2"}),
	}
	var omit []string
	for _, f := range []string{"max_requeues", "requeue_tolerance", "max_reclaims"} {
		if r.rng.IntN(5) == 0 {
			omit = append(omit, f)
		}
	}
	r.publish(units, meta, omit)
	return r
}

// publish lays both builds out identically, names their entries and checks
// that they start equal.
func (r *refRun) publish(units []string, meta map[string]string, omit []string) {
	r.t.Helper()
	r.units = units
	for _, s := range []*refSide{r.a, r.b} {
		s.e.publish(units, meta)
		for _, f := range omit {
			mustNil(r.t, s.e.do("HDEL", s.e.keys.Meta, f).Error())
		}
		mustNil(r.t, s.syncNames())
	}
	r.t.Logf("units %q, meta budgets %v, left out of meta: %v", units, meta, omit)
	r.compare(refOp{note: "after publishing"}, "", "")
}

func (r *refRun) run(n int) {
	// Corruption is rare: in some sequences only, once or twice each.
	if r.rng.IntN(2) == 0 {
		r.hdelAt = append(r.hdelAt, n/3+r.rng.IntN(max(1, n/2)))
	}
	if r.rng.IntN(3) == 0 {
		r.xdelAt = append(r.xdelAt, r.rng.IntN(n), r.rng.IntN(n))
	}
	if os.Getenv("HOPPER_REFERENCE_XDEL") == "0" {
		r.xdelAt = nil // drawn all the same, so that a seed replays the rest alike
	}
	if r.rng.IntN(5) < 2 {
		r.delMetaAt = n - 1 - r.rng.IntN(max(1, n/10))
	}
	r.t.Logf("unit_state deleted at operations %v, pending entries deleted at %v, meta deleted at %d (-1: never)",
		r.hdelAt, r.xdelAt, r.delMetaAt)
	for r.index < n {
		r.step()
	}
}

// do applies op to both builds, then compares the replies and the states.
// It returns the script's reply as rendered, and what the read returned when
// op is a read.
func (r *refRun) do(op refOp) (string, *refTicket) {
	r.t.Helper()
	r.index++
	ra, read := r.apply(r.a, op)
	rb, _ := r.apply(r.b, op)
	r.compare(op, ra, rb)
	r.cov.add(r.coverageKey(op, ra))
	switch {
	case op.kind == refRead:
		r.drained = read == nil
	case strings.HasPrefix(ra, `[string "REQUEUED"`):
		r.drained = false
	}
	return ra, read
}

func (r *refRun) coverageKey(op refOp, reply string) string {
	switch op.kind {
	case refTransition:
		status := reply
		if strings.HasPrefix(reply, "[string ") {
			status = strings.Trim(strings.SplitN(strings.TrimPrefix(reply, "[string "), ",", 2)[0], `"]`)
		}
		return op.argv[0] + " -> " + status
	case refRead:
		if strings.HasPrefix(reply, "nothing") {
			return "XREADGROUP -> nothing"
		}
		return "XREADGROUP -> entry"
	case refHDelState:
		return "HDEL unit_state"
	case refXDel:
		return "XDEL"
	case refRaw:
		return "command " + op.argv[0]
	}
	return "DEL meta"
}

func (r *refRun) apply(s *refSide, op refOp) (string, *refTicket) {
	r.t.Helper()
	e := s.e
	switch op.kind {
	case refTransition:
		argv := make([]string, len(op.argv))
		for i, a := range op.argv {
			real, err := s.resolve(a)
			if err != nil {
				r.fail(op, "resolving arguments: "+err.Error(), "", "", "")
			}
			argv[i] = real
		}
		reply, err := s.call(argv)
		return s.renderReply(reply, err), nil
	case refRead:
		x, ok := e.reserve(op.worker)
		if !ok {
			return "nothing", nil
		}
		tk := &refTicket{worker: op.worker, stream: x.stream, entry: s.norm(x.id), unit: x.unit, typ: x.typ, count: 1}
		return fmt.Sprintf("%s %s id=%q type=%q", x.stream, s.norm(x.id), x.unit, x.typ), tk
	case refHDelState:
		n, err := e.do("HDEL", e.keys.UnitState, op.unit).AsInt64()
		return fmt.Sprint(n, err), nil
	case refXDel:
		id, err := s.resolve(op.entry)
		if err != nil {
			r.fail(op, err.Error(), "", "", "")
		}
		key := e.keys.Units
		if op.stream == queue.StreamPriority {
			key = e.keys.Priority
		}
		n, err := e.do("XDEL", key, id).AsInt64()
		return fmt.Sprint(n, err), nil
	case refDelMeta:
		n, err := e.do("DEL", e.keys.Meta).AsInt64()
		return fmt.Sprint(n, err), nil
	case refRaw:
		k := e.keys
		keys := map[string]string{
			"{units}": k.Units, "{units:priority}": k.Priority, "{attempts}": k.Attempts,
			"{meta}": k.Meta, "{unit_state}": k.UnitState, "{workers}": k.Workers,
		}
		args := make([]string, len(op.argv))
		for i, a := range op.argv {
			if key, ok := keys[a]; ok {
				args[i] = key
				continue
			}
			real, err := s.resolve(a)
			if err != nil {
				r.fail(op, err.Error(), "", "", "")
			}
			args[i] = real
		}
		if len(args) == 4 && args[0] == "HSET" && args[1] == k.Workers {
			s.handWritten[args[3]] = true
		}
		v, err := e.do(args...).ToAny()
		// A key the command created gets a TTL, as a publisher would give it.
		if err := s.resetTTLs(); err != nil {
			r.fail(op, err.Error(), "", "", "")
		}
		// Ids a command returns are this build's own: only their shape compares.
		return refEntryID.ReplaceAllString(fmt.Sprint(v, err), "<id>"), nil
	}
	panic("unknown op")
}

// compare checks the replies and the two builds' states after op, and fails
// the sequence with a readable report when they differ.
func (r *refRun) compare(op refOp, ra, rb string) {
	r.t.Helper()
	// Each snapshot names new entries, and sets the TTLs that the next
	// snapshot reads to tell whether the next operation renewed them.
	sa, err := r.a.snapshot(true)
	if err != nil {
		r.fail(op, r.a.name+" build snapshot: "+err.Error(), ra, rb, "")
	}
	sb, err := r.b.snapshot(true)
	if err != nil {
		r.fail(op, r.b.name+" build snapshot: "+err.Error(), ra, rb, "")
	}
	if r.index == 0 {
		r.history = append(r.history, "#0 both builds published")
	} else {
		r.history = append(r.history, fmt.Sprintf("#%d %v -> %s", r.index, op, ra))
	}
	diff := diffSnaps(sa, sb)
	problems := append(slices.Clone(sa.problems), sb.problems...)
	if ra != rb || diff != "" || len(problems) > 0 {
		msg := ""
		if ra != rb {
			msg = "replies differ"
		}
		if diff != "" {
			msg = strings.TrimPrefix(msg+"; states differ", "; ")
		}
		if len(problems) > 0 {
			msg = strings.TrimPrefix(msg+"; "+strings.Join(problems, "; "), "; ")
		}
		r.fail(op, msg, ra, rb, diff)
	}
	r.snap = sa
	r.learnTickets()
}

func (r *refRun) fail(op refOp, what, ra, rb, diff string) {
	r.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s, operation #%d: %v\n", r.label, r.index, op)
	fmt.Fprintf(&b, "%s\n", what)
	fmt.Fprintf(&b, "  %s reply: %s\n  %s reply: %s\n", r.a.name, ra, r.b.name, rb)
	if diff != "" {
		b.WriteString(diff)
	}
	fmt.Fprintf(&b, "operations so far (%s's replies):\n", r.a.name)
	from := max(0, len(r.history)-25)
	if from > 0 {
		fmt.Fprintf(&b, "  ... %d earlier\n", from)
	}
	for _, h := range r.history[from:] {
		b.WriteString("  " + h + "\n")
	}
	r.t.Fatal(b.String())
}

// learnTickets adds what workers now hold, as Redis says (reads, reclaims):
// a ticket per pending row not yet known. Old tickets stay: they are the
// stale reservations of the sequence.
func (r *refRun) learnTickets() {
	ids := make([]string, 0, len(r.snap.pending))
	for id := range r.snap.pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		p := r.snap.pending[id]
		known := slices.ContainsFunc(r.tickets, func(t refTicket) bool {
			return t.entry == id && t.worker == p.consumer && t.count == p.count
		})
		if known {
			continue
		}
		tk := refTicket{worker: p.consumer, stream: p.stream, entry: id, count: p.count}
		if x, ok := r.snap.fields[id]; ok {
			tk.unit, _ = x.field("id")
			tk.typ, _ = x.field("type")
		} else if i := slices.IndexFunc(r.tickets, func(t refTicket) bool { return t.entry == id }); i >= 0 {
			tk.unit, tk.typ = r.tickets[i].unit, r.tickets[i].typ
		}
		if tk.unit == "" {
			continue
		}
		if tk.typ == "" {
			tk.typ = "file"
		}
		r.tickets = append(r.tickets, tk)
	}
}

func (r *refRun) valid(tk refTicket) bool {
	p, ok := r.snap.pending[tk.entry]
	return ok && p.stream == tk.stream && p.consumer == tk.worker && p.count == tk.count
}

// ---------------------------------------------------------------------------
// The generator
// ---------------------------------------------------------------------------

func (r *refRun) pick(xs []string) string { return xs[r.rng.IntN(len(xs))] }

func (r *refRun) worker() string { return r.pick(refWorkers) }

// anyWorker is a pool worker, or now and then one that never read anything
// (no consumer of its name exists yet).
func (r *refRun) anyWorker() string {
	if r.rng.IntN(15) == 0 {
		return "w5"
	}
	return r.worker()
}

func (r *refRun) step() {
	switch {
	case r.index == r.delMetaAt:
		r.do(refOp{kind: refDelMeta, note: "corrupt"})
		return
	case slices.Contains(r.hdelAt, r.index):
		r.do(refOp{kind: refHDelState, unit: r.pick(r.units), note: "corrupt"})
		return
	case slices.Contains(r.xdelAt, r.index) && len(r.snap.pending) > 0:
		ids := make([]string, 0, len(r.snap.pending))
		for id := range r.snap.pending {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		id := ids[r.rng.IntN(len(ids))]
		r.do(refOp{kind: refXDel, stream: r.snap.pending[id].stream, entry: id, note: "corrupt: pending entry deleted"})
		return
	}
	x := r.rng.IntN(100)
	if !r.drained && !slices.ContainsFunc(r.tickets, r.valid) && r.rng.IntN(2) == 0 {
		x = 0 // nobody holds anything, and there is work left: mostly read
	}
	switch {
	case x < 22:
		r.reserve()
	case x < 25:
		r.account()
	case x < 33:
		tk, note := r.target()
		r.do(refOp{kind: refTransition, note: note, argv: []string{
			"heartbeat", tk.worker, refTTLArg, string(tk.stream), tk.entry, dc(tk.count), tk.unit}})
	case x < 45:
		r.finalize()
	case x < 57:
		r.requeue()
	case x < 62:
		tk, note := r.target()
		r.do(refOp{kind: refTransition, note: note, argv: []string{
			"abandoned", tk.worker, refTTLArg, string(tk.stream), tk.entry, dc(tk.count), tk.unit, r.pick(refElapsed)}})
	case x < 67:
		argv := []string{"liveness", r.anyWorker(), refTTLArg}
		switch r.rng.IntN(3) {
		case 0:
			argv = append(argv, "")
		case 1:
			argv = append(argv, r.pick(r.units))
		}
		r.do(refOp{kind: refTransition, argv: argv})
	case x < 77:
		r.do(refOp{kind: refTransition, argv: []string{"reclaim", r.anyWorker(), refTTLArg, "0", strconv.Itoa(r.rng.IntN(4))}})
	case x < 80:
		r.do(refOp{kind: refTransition, note: "nothing idle that long", argv: []string{
			"reclaim", r.anyWorker(), refTTLArg, "3600000", strconv.Itoa(r.rng.IntN(4))}})
	case x < 85:
		mode := "worker_error"
		if r.rng.IntN(2) == 0 {
			mode = "stale_rejected"
		}
		r.do(refOp{kind: refTransition, argv: []string{mode, r.worker(), refTTLArg, r.pick(r.prebuiltPayloads())}})
	default:
		// A settlement aimed at a stale reservation on purpose.
		tk, note := r.staleTarget()
		switch r.rng.IntN(4) {
		case 0:
			r.do(refOp{kind: refTransition, note: note, argv: []string{
				"heartbeat", tk.worker, refTTLArg, string(tk.stream), tk.entry, dc(tk.count), tk.unit}})
		case 1:
			r.do(refOp{kind: refTransition, note: note, argv: []string{
				"finalize", tk.worker, refTTLArg, string(tk.stream), tk.entry, dc(tk.count), tk.unit, "passed", "5", "", ""}})
		case 2:
			r.do(refOp{kind: refTransition, note: note, argv: []string{
				"requeue", tk.worker, refTTLArg, string(tk.stream), tk.entry, dc(tk.count), tk.unit, tk.typ, "2", "1", "5", "late", ""}})
		default:
			r.do(refOp{kind: refTransition, note: note, argv: []string{
				"delivery_accounting", tk.worker, refTTLArg, string(tk.stream), tk.entry, tk.unit}})
		}
	}
}

func (r *refRun) reserve() {
	w := r.worker()
	_, read := r.do(refOp{kind: refRead, worker: w})
	if read == nil || r.rng.IntN(100) < 12 {
		return // read, not yet accounted: a reclaim may come in between
	}
	acct, note := w, "the reader"
	if r.rng.IntN(100) < 5 {
		acct, note = r.otherWorker(w), "stale: not the reader"
	}
	r.do(refOp{kind: refTransition, note: note, argv: []string{
		"delivery_accounting", acct, refTTLArg, string(read.stream), read.entry, read.unit}})
}

func (r *refRun) account() {
	tk, note := r.target()
	r.do(refOp{kind: refTransition, note: note, argv: []string{
		"delivery_accounting", tk.worker, refTTLArg, string(tk.stream), tk.entry, tk.unit}})
}

func (r *refRun) finalize() {
	tk, note := r.target()
	outcome := "passed"
	if r.rng.IntN(2) == 0 {
		outcome = "failed"
	}
	argv := []string{"finalize", tk.worker, refTTLArg, string(tk.stream), tk.entry, dc(tk.count), tk.unit,
		outcome, r.pick(refDurations), r.pick(refReasons), r.pick(refErrors)}
	argv = argv[:len(argv)-r.trailing(2)]
	r.do(refOp{kind: refTransition, note: note, argv: argv})
}

func (r *refRun) requeue() {
	tk, note := r.target()
	typ := tk.typ
	if r.rng.IntN(10) == 0 {
		typ = "example"
	}
	argv := []string{"requeue", tk.worker, refTTLArg, string(tk.stream), tk.entry, dc(tk.count), tk.unit, typ,
		strconv.Itoa(r.rng.IntN(4)), r.pick(refTolerances), r.pick(refDurations), r.pick(refSummaries), r.pick(refErrors)}
	argv = argv[:len(argv)-r.trailing(2)]
	r.do(refOp{kind: refTransition, note: note, argv: argv})
}

// trailing is how many optional trailing arguments to leave off (up to n).
func (r *refRun) trailing(n int) int {
	if r.rng.IntN(5) != 0 {
		return 0
	}
	return 1 + r.rng.IntN(n)
}

func (r *refRun) otherWorker(w string) string {
	for {
		o := r.pick(append(slices.Clone(refWorkers), "w9"))
		if o != w {
			return o
		}
	}
}

// target picks a reservation to act on: mostly a valid one, sometimes an old
// (stale) one, and sometimes spoils it on purpose.
func (r *refRun) target() (refTicket, string) {
	var valid []refTicket
	for _, tk := range r.tickets {
		if r.valid(tk) {
			valid = append(valid, tk)
		}
	}
	var tk refTicket
	note := "valid"
	switch {
	case len(valid) > 0 && r.rng.IntN(100) < 80:
		tk = valid[r.rng.IntN(len(valid))]
	case len(r.tickets) > 0:
		tk = r.tickets[r.rng.IntN(len(r.tickets))]
		if !r.valid(tk) {
			note = "stale: old reservation"
		}
	default:
		return r.staleTarget()
	}
	if r.rng.IntN(100) < 12 {
		return r.spoil(tk)
	}
	return tk, note
}

// staleTarget picks a reservation that does not hold (or spoils one).
func (r *refRun) staleTarget() (refTicket, string) {
	var stale []refTicket
	for _, tk := range r.tickets {
		if !r.valid(tk) {
			stale = append(stale, tk)
		}
	}
	if len(stale) > 0 && r.rng.IntN(2) == 0 {
		return stale[r.rng.IntN(len(stale))], "stale: old reservation"
	}
	if len(r.tickets) > 0 && r.rng.IntN(3) > 0 {
		return r.spoil(r.tickets[r.rng.IntN(len(r.tickets))])
	}
	// An entry nobody was ever delivered, or one no build has.
	k := r.rng.IntN(len(r.units))
	tk := refTicket{worker: r.worker(), stream: queue.StreamUnits, entry: "@U" + strconv.Itoa(k), unit: r.units[k], typ: "file", count: 1}
	if _, pending := r.snap.pending[tk.entry]; pending || r.rng.IntN(2) == 0 {
		tk.entry = "9999999999999-0"
		if r.rng.IntN(2) == 0 {
			tk.stream = queue.StreamPriority
		}
		return tk, "stale: no such entry"
	}
	return tk, "stale: never delivered"
}

func (r *refRun) spoil(tk refTicket) (refTicket, string) {
	switch r.rng.IntN(8) {
	case 0, 1, 2:
		tk.worker = r.otherWorker(tk.worker)
		return tk, "spoilt: other worker"
	case 3, 4, 5:
		if tk.count > 1 && r.rng.IntN(2) == 0 {
			tk.count--
		} else {
			tk.count += 1 + int64(r.rng.IntN(3))
		}
		return tk, "spoilt: other delivery count"
	case 6:
		if tk.stream == queue.StreamUnits {
			tk.stream = queue.StreamPriority
		} else {
			tk.stream = queue.StreamUnits
		}
		return tk, "spoilt: other stream"
	}
	// Another unit's id with the entry, or a unit that has no state at all,
	// named by a worker that does not hold the entry: STALE on both sides,
	// the fence coming first. Named by the holder, hopper refuses what the
	// script takes, which reads no entry field
	// (TestSettlementNamesItsEntrysUnit).
	tk.worker = r.otherWorker(tk.worker)
	for p, ok := r.snap.pending[tk.entry]; ok && p.consumer == tk.worker; {
		tk.worker = r.otherWorker(tk.worker) // not the entry's owner now, either
	}
	if r.rng.IntN(3) == 0 {
		tk.unit = "ghost/unit_spec.rb"
		return tk, "spoilt: other worker, unit without state"
	}
	tk.unit = r.pick(r.units)
	return tk, "spoilt: other worker, maybe another unit"
}

// ---------------------------------------------------------------------------
// Directed scenarios
// ---------------------------------------------------------------------------

// newRefRunFixed is a comparison of two builds published with units and meta
// (budget fields set to "" are left out of meta), for a scripted scenario.
func newRefRunFixed(t *testing.T, sha string, units []string, meta map[string]string) *refRun {
	r := &refRun{
		t: t, rng: rand.New(rand.NewPCG(1, 2)), cov: &refCoverage{counts: map[string]int{}},
		a: newScriptSide(t, sha), b: newGoSide(t), delMetaAt: -1,
		label: "scenario " + t.Name(),
	}
	set := map[string]string{}
	var omit []string
	for f, v := range meta {
		if v == "" {
			omit = append(omit, f)
		} else {
			set[f] = v
		}
	}
	sort.Strings(omit)
	r.publish(units, set, omit)
	return r
}

// tr runs one transition on both builds and compares.
func (r *refRun) tr(argv ...string) string {
	r.t.Helper()
	reply, _ := r.do(refOp{kind: refTransition, argv: argv})
	return reply
}

// raw runs one command on both builds and compares.
func (r *refRun) raw(argv ...string) {
	r.t.Helper()
	r.do(refOp{kind: refRaw, argv: argv})
}

// take reads one entry for worker and accounts for it: the worker's
// reservation.
func (r *refRun) take(worker string) refTicket {
	r.t.Helper()
	_, tk := r.do(refOp{kind: refRead, worker: worker})
	if tk == nil {
		r.t.Fatalf("%s read nothing", worker)
	}
	r.tr("delivery_accounting", worker, refTTLArg, string(tk.stream), tk.entry, tk.unit)
	return *tk
}

// TestReferenceScenarios drives both builds through scripted sequences that
// random ones reach rarely or never: pending entries deleted from their
// stream, real reclaim timeouts, entries without a type, unit_state written
// by hand, meta without budgets, numbers JSON prints differently.
func TestReferenceScenarios(t *testing.T) {
	sha := loadReference(t)
	zero := `{"retry_index":0,"reclaim_count":0,"entered_retry":false}`
	budgets := map[string]string{"max_requeues": "2", "requeue_tolerance": "1", "max_reclaims": "3"}

	t.Run("reclaim: deleted entry at the head of the pending list", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2", "u3"}, budgets)
		r.take("w1")
		r.take("w1")
		r.raw("XDEL", "{units}", "@U0")
		r.tr("reclaim", "w2", refTTLArg, "0", "3")
		r.tr("reclaim", "w2", refTTLArg, "0", "3")
	})
	t.Run("reclaim: nothing idle, deleted entry pending", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2"}, budgets)
		r.take("w1")
		r.raw("XDEL", "{units}", "@U0")
		r.tr("reclaim", "w2", refTTLArg, "3600000", "3")
	})
	t.Run("reclaim: two deleted entries ahead of a live one", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2", "u3"}, budgets)
		r.take("w1")
		r.take("w1")
		r.take("w1")
		r.raw("XDEL", "{units}", "@U0", "@U1")
		r.tr("reclaim", "w2", refTTLArg, "0", "3")
	})
	t.Run("reclaim: deleted priority entry, then units", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2"}, budgets)
		a := r.take("w1")
		r.tr("requeue", "w1", refTTLArg, "units", a.entry, "1", a.unit, "file", "2", "1", "10", "", "")
		r.take("w1") // @P0
		r.take("w2") // @U1
		r.raw("XDEL", "{units:priority}", "@P0")
		r.tr("reclaim", "w3", refTTLArg, "0", "3")
	})
	t.Run("reclaim: deleted pending entries settled by their owner", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2", "u3"}, budgets)
		a, b := r.take("w1"), r.take("w1")
		r.raw("XDEL", "{units}", "@U0", "@U1")
		r.tr("heartbeat", "w1", refTTLArg, "units", a.entry, "1", a.unit)
		r.tr("abandoned", "w1", refTTLArg, "units", a.entry, "1", a.unit, "10")
		r.tr("finalize", "w1", refTTLArg, "units", a.entry, "1", a.unit, "passed", "10", "", "")
		r.tr("requeue", "w1", refTTLArg, "units", b.entry, "1", b.unit, "file", "2", "1", "10", "x", "")
		r.take("w2") // the requeued unit
	})
	t.Run("reclaim: real timeout, first idle entry rather than first pending", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2", "u3"}, budgets)
		a := r.take("w1")
		r.take("w2")
		time.Sleep(600 * time.Millisecond)
		r.tr("heartbeat", "w1", refTTLArg, "units", a.entry, "1", a.unit)
		r.tr("reclaim", "w3", refTTLArg, "300", "3") // u2, from w2
		r.tr("reclaim", "w4", refTTLArg, "300", "3") // nothing idle that long
	})
	t.Run("entry without a type field", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1"}, budgets)
		r.raw("XADD", "{units}", "*", "id", "u9")
		r.raw("HSET", "{unit_state}", "u9", zero)
		a := r.take("w1")
		r.tr("finalize", "w1", refTTLArg, "units", a.entry, "1", a.unit, "passed", "1")
		r.take("w1") // u9
		r.tr("reclaim", "w2", refTTLArg, "0", "3")
		r.tr("requeue", "w2", refTTLArg, "units", "@U1", "2", "u9", "file", "2", "1", "3", "", "")
		r.take("w3")
	})
	t.Run("unit_state written in other shapes", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2", "u3"}, budgets)
		r.raw("HSET", "{unit_state}", "u1", `{"retry_index":0,"reclaim_count":0}`)
		r.raw("HSET", "{unit_state}", "u2", `{ "reclaim_count" : 0 , "retry_index" : 0 , "entered_retry" : false }`)
		r.raw("HSET", "{unit_state}", "u3", `{"retry_index":1,"reclaim_count":2,"entered_retry":true}`)
		a := r.take("w1")
		r.tr("requeue", "w1", refTTLArg, "units", a.entry, "1", a.unit, "file", "2", "1", "10", "", "")
		r.take("w1") // u1 again, from priority
		r.tr("reclaim", "w2", refTTLArg, "0", "3")
		b := r.take("w1") // u2
		r.tr("abandoned", "w1", refTTLArg, "units", b.entry, "1", b.unit, "99")
		r.tr("finalize", "w1", refTTLArg, "units", b.entry, "1", b.unit, "failed", "3", "test_failure", `[]`)
		c := r.take("w3") // u3
		r.tr("requeue", "w3", refTTLArg, "units", c.entry, "1", c.unit, "file", "2", "1", "10", "", "")
	})
	t.Run("heartbeat on a unit whose unit_state is not JSON", func(t *testing.T) {
		// The script's heartbeat never reads the unit's state: it renews
		// whatever is there.
		r := newRefRunFixed(t, sha, []string{"u1", "u2"}, budgets)
		a := r.take("w1")
		r.raw("HSET", "{unit_state}", "u1", `not json`)
		r.tr("heartbeat", "w1", refTTLArg, "units", a.entry, "1", a.unit)
		r.tr("heartbeat", "w1", refTTLArg, "units", a.entry, "1", a.unit)
	})
	t.Run("stale calls on records that are not JSON", func(t *testing.T) {
		// The script checks the fence before it decodes the unit's state or
		// the worker's record: a stale call is STALE whatever they hold.
		r := newRefRunFixed(t, sha, []string{"u1", "u2"}, budgets)
		a := r.take("w1")
		r.raw("HSET", "{unit_state}", "u1", `not json`)
		r.raw("HSET", "{workers}", "w2", `not json`)
		for _, w := range []string{"w2", "w1"} {
			count := "1"
			if w == "w1" {
				count = "2" // w1 holds the entry, at delivery 1
			}
			r.tr("finalize", w, refTTLArg, "units", a.entry, count, a.unit, "passed", "1", "", "")
			r.tr("requeue", w, refTTLArg, "units", a.entry, count, a.unit, "file", "2", "1", "10", "", "")
			r.tr("abandoned", w, refTTLArg, "units", a.entry, count, a.unit, "1")
		}
		r.tr("heartbeat", "w2", refTTLArg, "units", a.entry, "1", a.unit)
		r.tr("delivery_accounting", "w2", refTTLArg, "units", a.entry, a.unit)
		r.tr("reclaim", "w2", refTTLArg, "3600000", "3") // nothing idle: the record is not read
	})
	t.Run("reclaim of a unit without state by a worker whose record is not JSON", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2"}, budgets)
		r.take("w1")
		r.raw("HDEL", "{unit_state}", "u1")
		r.raw("HSET", "{workers}", "w2", `not json`)
		r.tr("reclaim", "w2", refTTLArg, "0", "3") // CORRUPT before the record is read
	})
	t.Run("meta without budgets: the caller's apply", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2", "u3", "u4"},
			map[string]string{"max_requeues": "", "requeue_tolerance": "", "max_reclaims": ""})
		a := r.take("w1")
		r.tr("requeue", "w1", refTTLArg, "units", a.entry, "1", a.unit, "file", "1", "0.5", "10", "", "")
		b := r.take("w1") // u1 again
		r.tr("requeue", "w1", refTTLArg, "units:priority", b.entry, "1", b.unit, "file", "1", "0.5", "10", "", "")
		c := r.take("w1")
		r.tr("requeue", "w1", refTTLArg, "units", c.entry, "1", c.unit, "file", "3", "0.5", "10", "", "")
		d := r.take("w1")
		r.tr("requeue", "w1", refTTLArg, "units", d.entry, "1", d.unit, "file", "3", "0.5", "10", "", "") // over the tolerance
		r.take("w2")
		r.tr("reclaim", "w3", refTTLArg, "0", "1")
		r.tr("reclaim", "w4", refTTLArg, "0", "1")
	})
	t.Run("worker records written in other shapes", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2", "u3"}, map[string]string{"max_reclaims": "0"})
		r.raw("HSET", "{workers}", "w1", `{"processed":"3","current_unit":42,"extra":[1]}`)
		r.raw("HSET", "{workers}", "w2", `{"last_seen":1}`)
		r.raw("HSET", "{workers}", "w3", `{"current_unit":{"a":"b/c"},"processed":2.5,"last_seen":1}`)
		a := r.take("w4")
		r.tr("abandoned", "w1", refTTLArg, "units", a.entry, "1", a.unit, "1") // stale: w1's record untouched
		r.tr("reclaim", "w1", refTTLArg, "0", "3")                             // over max_reclaims 0: keeps current_unit 42
		b := r.take("w2")
		r.tr("abandoned", "w2", refTTLArg, "units", b.entry, "1", b.unit, "1")
		r.tr("finalize", "w2", refTTLArg, "units", b.entry, "1", b.unit, "passed", "1")
		r.tr("liveness", "w3", refTTLArg)
		r.raw("HSET", "{workers}", "w3", `{"current_unit":{"a":"b/c"},"processed":2.5,"last_seen":1}`)
		c := r.take("w3")
		r.tr("finalize", "w3", refTTLArg, "units", c.entry, "1", c.unit, "failed", "1", "test_failure")
	})
	t.Run("worker record whose last_seen is not a number", func(t *testing.T) {
		// The script overwrites last_seen without reading it.
		r := newRefRunFixed(t, sha, []string{"u1"}, budgets)
		r.raw("HSET", "{workers}", "w1", `{"last_seen":"2026-12-02T13:00:00Z","current_unit":null,"processed":1}`)
		r.tr("liveness", "w1", refTTLArg, "")
		a := r.take("w1")
		r.tr("finalize", "w1", refTTLArg, "units", a.entry, "1", a.unit, "passed", "1")
	})
	t.Run("numbers: exponents, spaces, trailing zeros", func(t *testing.T) {
		r := newRefRunFixed(t, sha, []string{"u1", "u2", "u3"}, budgets)
		a := r.take("w1")
		r.tr("abandoned", "w1", refTTLArg, "units", a.entry, "1", a.unit, "1e3")
		r.tr("finalize", "w1", refTTLArg, "units", a.entry, "1", a.unit, "passed", " 12 ", "", "")
		b := r.take("w1")
		r.tr("requeue", "w1", refTTLArg, "units", b.entry, "1", b.unit, "file", "2", "1", "12.50", "", `[1e2, 0.10, -0]`)
		c := r.take("w1")
		r.tr("finalize", "w1", refTTLArg, "units", c.entry, "1", c.unit, "failed", "0.1", "", `{"n":1.0}`)
	})
	t.Run("numbers: more than 14 significant digits", func(t *testing.T) {
		// The script's cjson prints numbers with 14 significant digits.
		r := newRefRunFixed(t, sha, []string{"u1", "u2", "u3"}, budgets)
		a := r.take("w1")
		r.tr("finalize", "w1", refTTLArg, "units", a.entry, "1", a.unit, "passed", "1234.5678901234567", "", "")
		b := r.take("w1")
		r.tr("abandoned", "w1", refTTLArg, "units", b.entry, "1", b.unit, "123456789012345678")
		r.tr("requeue", "w1", refTTLArg, "units", b.entry, "1", b.unit, "file", "2", "1", "0.30000000000000004", "", "")
	})
}

// ---------------------------------------------------------------------------
// Errors: where both refuse
// ---------------------------------------------------------------------------

// TestReferenceErrors compares error against error: calls the script refuses
// with a Redis error before writing anything, and that Transition refuses too
// (with queue.ErrInvalidArgument, or the unknown-mode error). Neither build
// may change, and the two must still be equal.
func TestReferenceErrors(t *testing.T) {
	sha := loadReference(t)
	a, b := newScriptSide(t, sha), newGoSide(t)
	units := []string{"./spec/a_spec.rb", "u2"}
	var entry string
	for _, s := range []*refSide{a, b} {
		s.e.publish(units, map[string]string{"max_requeues": "2", "requeue_tolerance": "1"})
		mustNil(t, s.syncNames())
		x, ok := s.e.reserve("w1")
		if !ok {
			t.Fatal("nothing to reserve")
		}
		entry = s.norm(x.id)
		reply, err := s.call([]string{"delivery_accounting", "w1", refTTLArg, "units", x.id, x.unit})
		if err != nil || len(reply) == 0 || reply[0] != "OK" {
			t.Fatalf("%s build: delivery_accounting: %v %v", s.name, reply, err)
		}
	}
	cases := []struct {
		name        string
		argv        []string
		unknownMode bool
	}{
		{"unknown mode", []string{"teleport", "w1", refTTLArg}, true},
		{"unknown mode with arguments", []string{"finalise", "w1", refTTLArg, "units", entry, "1", units[0], "passed", "1"}, true},
		{"empty mode", []string{"", "w1", refTTLArg}, true},
		{"unknown stream: delivery_accounting", []string{"delivery_accounting", "w1", refTTLArg, "units:other", entry, units[0]}, false},
		{"unknown stream: heartbeat", []string{"heartbeat", "w1", refTTLArg, "units:other", entry, "1", units[0]}, false},
		{"unknown stream: finalize", []string{"finalize", "w1", refTTLArg, "priority", entry, "1", units[0], "passed", "1", "", ""}, false},
		{"unknown stream: requeue", []string{"requeue", "w1", refTTLArg, "UNITS", entry, "1", units[0], "file", "2", "1", "1", "", ""}, false},
		{"unknown stream: abandoned", []string{"abandoned", "w1", refTTLArg, "", entry, "1", units[0], "5"}, false},
		{"prebuilt: array", []string{"worker_error", "w1", refTTLArg, `[1,2]`}, false},
		{"prebuilt: string", []string{"stale_rejected", "w1", refTTLArg, `"x"`}, false},
		{"prebuilt: empty", []string{"worker_error", "w1", refTTLArg, ``}, false},
		{"prebuilt: truncated", []string{"worker_error", "w1", refTTLArg, `{"a":`}, false},
		{"prebuilt: number", []string{"stale_rejected", "w1", refTTLArg, `42`}, false},
		{"reclaim: timeout not a number", []string{"reclaim", "w2", refTTLArg, "soon", "3"}, false},
		{"delivery_accounting: entry id missing", []string{"delivery_accounting", "w1", refTTLArg, "units"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := [2]refSnap{}
			for i, s := range []*refSide{a, b} {
				mustNil(t, s.resetTTLs())
				snap, err := s.snapshot(false)
				mustNil(t, err)
				before[i] = snap
			}
			var errs [2]error
			for i, s := range []*refSide{a, b} {
				argv := make([]string, len(c.argv))
				for j, x := range c.argv {
					v, err := s.resolve(x)
					mustNil(t, err)
					argv[j] = v
				}
				reply, err := s.call(argv)
				if err == nil {
					t.Errorf("%s build: %q: reply %s, want an error", s.name, c.argv, s.renderReply(reply, nil))
				}
				errs[i] = err
			}
			t.Logf("script: %v\n        go:     %v", errs[0], errs[1])
			if errs[1] != nil {
				if c.unknownMode {
					want := "ERR unknown transition mode " + c.argv[0]
					if errs[1].Error() != want {
						t.Errorf("go error %q, want %q", errs[1], want)
					}
					// rueidis drops the "ERR " prefix of an error reply
					// (the script's wire reply is "-ERR unknown ..."),
					// while Transition's error keeps it.
					if errs[0] != nil && "ERR "+strings.TrimPrefix(errs[0].Error(), "ERR ") != want {
						t.Errorf("script error %q, go error %q: messages differ", errs[0], want)
					}
				}
				if !errors.Is(errs[1], queue.ErrInvalidArgument) {
					t.Errorf("go error %v does not wrap queue.ErrInvalidArgument", errs[1])
				}
			}
			for i, s := range []*refSide{a, b} {
				after, err := s.snapshot(false)
				mustNil(t, err)
				if d := diffSnapsAs(before[i], after, "- before, + after"); d != "" {
					t.Errorf("%s build changed:\n%s", s.name, d)
				}
			}
		})
	}
	// Both builds, untouched by the refused calls, are still equal.
	sa, err := a.snapshot(false)
	mustNil(t, err)
	sb, err := b.snapshot(false)
	mustNil(t, err)
	if d := diffSnaps(sa, sb); d != "" {
		t.Errorf("builds differ:\n%s", d)
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
