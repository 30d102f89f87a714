package engine

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
)

// testTrip is the tests' shape of a first round trip: how many ops read.
type testTrip struct{ ops int }

// errRefused is the tests' refusal.
var errRefused = errors.New("refused")

// testDomain is a Domain whose transitions WATCH their worker's guard,
// read GET of their subject, and decide by refuse.
type testDomain struct {
	refuse  func(op *testOp, reply rueidis.RedisResult) error
	carried Behind // what every commit carries; nil: nothing
	mu      sync.Mutex
	arrived []time.Duration // what each Decide was told
}

func (d *testDomain) Trip(ops []*testOp) testTrip { return testTrip{ops: len(ops)} }

func (d *testDomain) AppendTrip(cmds rueidis.Commands, c Conn, ops []*testOp, tr testTrip) rueidis.Commands {
	cmds = append(cmds, c.B().Watch().Key(d.WorkerGuard(ops[0].Claim.Worker)).Build())
	for _, op := range ops {
		cmds = append(cmds, c.B().Get().Key(op.Subject).Build())
	}
	return cmds
}

func (d *testDomain) SameTrip(kept, own testTrip) bool { return kept == own }

func (d *testDomain) Decide(_ context.Context, c Conn, t *Txn, ops []*testOp, _ testTrip, res []rueidis.RedisResult, arrived time.Duration) (rueidis.Commands, error) {
	d.mu.Lock()
	d.arrived = append(d.arrived, arrived)
	d.mu.Unlock()
	if err := res[0].Error(); err != nil {
		return nil, err
	}
	t.Now = 1_000_000
	writes := t.Writes(c.B(), len(ops))
	for i, op := range ops {
		if d.refuse != nil {
			if op.Err = d.refuse(op, res[1+i]); op.Err != nil {
				continue
			}
		}
		writes = append(writes, c.B().Set().Key(op.Subject).Value(op.Mode).Build())
	}
	return writes, nil
}

func (d *testDomain) WorkerGuard(worker string) string { return "guard:" + worker }

func (d *testDomain) Renew(_ Conn, writes rueidis.Commands) rueidis.Commands { return writes }

func (d *testDomain) Carried([]*testOp) Behind { return d.carried }

func (d *testDomain) NextMode(mode string) string {
	if mode == "first" {
		return "second"
	}
	return ""
}

func (d *testDomain) Settles(mode string) bool { return mode == "second" }

func (d *testDomain) KeepAfter(err error) string {
	if errors.Is(err, errRefused) {
		return "after"
	}
	return ""
}

// timeReply is a TIME reply of ms epoch milliseconds.
func timeReply(ms int64) rueidis.RedisResult {
	sec, usec := ms/1000, (ms%1000)*1000
	return mock.Result(mock.RedisArray(mock.RedisBlobString(strconv.FormatInt(sec, 10)), mock.RedisBlobString(strconv.FormatInt(usec, 10))))
}

// ok is an OK reply.
func ok() rueidis.RedisResult { return mock.Result(mock.RedisString("OK")) }
