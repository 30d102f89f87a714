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
//     pending entries are not compared; TTLs are only checked positive;
//   - inputs that Transition refuses by design before touching Redis (invalid
//     JSON in errors, an unknown outcome or mode, counts below 1, an empty
//     unit type, a prebuilt payload with trailing whitespace...) are never
//     generated: the script would error half-way or write a corrupt log.
//     TestReferenceErrors compares error against error where both refuse.
//
// Environment: HOPPER_REFERENCE_SEED replays one sequence;
// HOPPER_REFERENCE_SEQUENCES and HOPPER_REFERENCE_OPS change the default 20
// sequences of 150 operations.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
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
	seqs, ops := envInt(t, "HOPPER_REFERENCE_SEQUENCES", 20), envInt(t, "HOPPER_REFERENCE_OPS", 150)
	var seeds []uint64
	if s := os.Getenv("HOPPER_REFERENCE_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HOPPER_REFERENCE_SEED=%q: %v", s, err)
		}
		seeds = []uint64{seed}
	} else {
		for range seqs {
			seeds = append(seeds, rand.Uint64()%1e12)
		}
	}
	cov := &refCoverage{counts: map[string]int{}}
	start := time.Now()
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d: replay with HOPPER_REFERENCE_SEED=%d", seed, seed)
			r := newRefRun(t, sha, seed, cov)
			r.run(ops)
		})
	}
	cov.mu.Lock()
	defer cov.mu.Unlock()
	t.Logf("%d sequences, %d operations compared (replies and full state after each) in %v",
		len(seeds), cov.ops, time.Since(start).Round(time.Millisecond))
	keys := make([]string, 0, len(cov.counts))
	for k := range cov.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-40s %d", k, cov.counts[k])
	}
	t.Logf("replies seen (operation -> script's reply status):%s", b.String())
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
	}
}

// ---------------------------------------------------------------------------
// One sequence
// ---------------------------------------------------------------------------

type refRun struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	a, b *refSide
	cov  *refCoverage

	units   []string
	meta    map[string]string
	tickets []refTicket
	snap    refSnap // build A's state after the last operation (equal to B's)
	history []string
	index   int

	hdels, xdels int
	allowXDel    bool
	delMetaAt    int // operation index at which meta is deleted; -1 never
	metaDeleted  bool
}

func newRefRun(t *testing.T, sha string, seed uint64, cov *refCoverage) *refRun {
	r := &refRun{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), cov: cov,
		a: newScriptSide(t, sha), b: newGoSide(t),
	}
	// Units: a few, in random order.
	names := slices.Clone(refUnitNames)
	r.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	r.units = names[:2+r.rng.IntN(6)]
	// Budgets frozen into meta; sometimes left out, so the caller's own
	// values are the fallback.
	r.meta = map[string]string{
		"max_requeues":      strconv.Itoa(r.rng.IntN(3)),
		"requeue_tolerance": []string{"0", "0.5", "1"}[r.rng.IntN(3)],
		"max_reclaims":      strconv.Itoa(r.rng.IntN(3)),
	}
	var omit []string
	for _, f := range []string{"max_requeues", "requeue_tolerance", "max_reclaims"} {
		if r.rng.IntN(5) == 0 {
			omit = append(omit, f)
		}
	}
	r.allowXDel = r.rng.IntN(3) == 0
	r.delMetaAt = -1
	for _, s := range []*refSide{r.a, r.b} {
		s.e.publish(r.units, r.meta)
		for _, f := range omit {
			if err := s.e.do("HDEL", s.e.keys.Meta, f).Error(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.mapUnits(); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(omit)
	t.Logf("units %q, meta budgets %v, left out of meta: %v, xdel allowed: %v", r.units, r.meta, omit, r.allowXDel)
	r.compare(refOp{note: "after publishing"}, "", "")
	return r
}

func (r *refRun) run(n int) {
	if r.rng.IntN(5) < 2 {
		r.delMetaAt = n - 1 - r.rng.IntN(max(1, n/10))
	}
	for r.index < n {
		r.step(n)
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
	}
	panic("unknown op")
}

// compare checks the replies and the two builds' states after op, and fails
// the sequence with a readable report when they differ.
func (r *refRun) compare(op refOp, ra, rb string) {
	r.t.Helper()
	for _, s := range []*refSide{r.a, r.b} {
		if err := s.syncPriority(); err != nil {
			r.fail(op, fmt.Sprintf("%s build: reading units:priority: %v", s.name, err), ra, rb, "")
		}
	}
	sa, err := r.a.snapshot()
	if err != nil {
		r.fail(op, "script build snapshot: "+err.Error(), ra, rb, "")
	}
	sb, err := r.b.snapshot()
	if err != nil {
		r.fail(op, "go build snapshot: "+err.Error(), ra, rb, "")
	}
	r.history = append(r.history, fmt.Sprintf("#%d %v -> %s", r.index, op, ra))
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
	fmt.Fprintf(&b, "seed %d (replay: HOPPER_REFERENCE_SEED=%d), operation #%d: %v\n", r.seed, r.seed, r.index, op)
	fmt.Fprintf(&b, "%s\n", what)
	fmt.Fprintf(&b, "  script reply: %s\n  go reply:     %s\n", ra, rb)
	if diff != "" {
		b.WriteString(diff)
	}
	b.WriteString("operations so far (script's replies):\n")
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

func (r *refRun) step(n int) {
	if r.index == r.delMetaAt && !r.metaDeleted {
		r.metaDeleted = true
		r.do(refOp{kind: refDelMeta, note: "corrupt"})
		return
	}
	x := r.rng.IntN(100)
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
		argv := []string{"liveness", r.worker(), refTTLArg}
		switch r.rng.IntN(3) {
		case 0:
			argv = append(argv, "")
		case 1:
			argv = append(argv, r.pick(r.units))
		}
		r.do(refOp{kind: refTransition, argv: argv})
	case x < 77:
		r.do(refOp{kind: refTransition, argv: []string{"reclaim", r.worker(), refTTLArg, "0", strconv.Itoa(r.rng.IntN(4))}})
	case x < 80:
		r.do(refOp{kind: refTransition, note: "nothing idle that long", argv: []string{
			"reclaim", r.worker(), refTTLArg, "3600000", strconv.Itoa(r.rng.IntN(4))}})
	case x < 85:
		mode := "worker_error"
		if r.rng.IntN(2) == 0 {
			mode = "stale_rejected"
		}
		r.do(refOp{kind: refTransition, argv: []string{mode, r.worker(), refTTLArg, r.pick(r.prebuiltPayloads())}})
	case x < 87:
		r.corrupt()
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
	// Another unit's id with the entry (the script does not check that the
	// entry is the unit's), or a unit that has no state at all.
	if r.rng.IntN(3) == 0 {
		tk.unit = "ghost/unit_spec.rb"
		return tk, "spoilt: unit without state"
	}
	tk.unit = r.pick(r.units)
	return tk, "spoilt: maybe another unit"
}

// corrupt deletes state both builds depend on: a unit's unit_state field
// (rarely), or a pending entry from its stream (in some sequences only).
func (r *refRun) corrupt() {
	if r.allowXDel && r.xdels < 2 && r.rng.IntN(2) == 0 {
		ids := make([]string, 0, len(r.snap.pending))
		for id := range r.snap.pending {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if len(ids) > 0 {
			id := ids[r.rng.IntN(len(ids))]
			r.xdels++
			r.do(refOp{kind: refXDel, stream: r.snap.pending[id].stream, entry: id, note: "corrupt: pending entry deleted"})
			return
		}
	}
	if r.hdels < 2 {
		r.hdels++
		r.do(refOp{kind: refHDelState, unit: r.pick(r.units), note: "corrupt"})
		return
	}
	r.do(refOp{kind: refTransition, argv: []string{"liveness", r.worker(), refTTLArg}})
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
		mustNil(t, s.mapUnits())
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
				snap, err := s.snapshot()
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
					if errs[0] != nil && errs[0].Error() != want {
						t.Errorf("script error %q, go error %q: messages differ", errs[0], want)
					}
				}
				if !errors.Is(errs[1], queue.ErrInvalidArgument) {
					t.Errorf("go error %v does not wrap queue.ErrInvalidArgument", errs[1])
				}
			}
			for i, s := range []*refSide{a, b} {
				after, err := s.snapshot()
				mustNil(t, err)
				if d := diffSnapsAs(before[i], after, "- before, + after"); d != "" {
					t.Errorf("%s build changed:\n%s", s.name, d)
				}
			}
		})
	}
	// Both builds, untouched by the refused calls, are still equal.
	sa, err := a.snapshot()
	mustNil(t, err)
	sb, err := b.snapshot()
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
