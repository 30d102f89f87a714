package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redis/rueidis"
)

// floor is what one round trip to the server costs with nothing in it: a
// PING, from one goroutine, waiting for each reply before the next. A
// transition cannot take less than its round trips, so on a machine where
// the round trip dominates, this bounds what any design of a given number
// of round trips can reach, whatever it does on either end.
type floor struct {
	dedicated, pipelined time.Duration // median wall time of one PING
	client, server       float64       // CPU µs per dedicated PING: this process, the server
}

// floorPings is how many PINGs each measurement sends, after as many
// unmeasured ones.
const floorPings = 2000

// measureFloor times PINGs on a dedicated connection (ours, as a
// transaction's round trip: synchronous, no deadline on the context) and
// on the script's auto-pipelined client, one at a time. Not part of the
// workload's figures.
func measureFloor(ctx context.Context, e *env) (floor, error) {
	var f floor
	lat := make([]time.Duration, floorPings)
	var cpu0, srv0 float64
	err := e.ours.Dedicated(func(c rueidis.DedicatedClient) error {
		ping := c.B().Ping().Build().Pin()
		return timePings(lat, func() error { return c.Do(ctx, ping).Error() }, func() (err error) {
			srv0, err = serverCPU(ctx, e.admin)
			cpu0 = processCPU()
			return err
		})
	})
	if err != nil {
		return f, fmt.Errorf("PING on a dedicated connection: %w", err)
	}
	f.client = (processCPU() - cpu0) * 1e6 / floorPings
	srv1, err := serverCPU(ctx, e.admin)
	if err != nil {
		return f, err
	}
	// The two INFO calls' own cost is left in: a few µs over 2,000 PINGs.
	f.server = (srv1 - srv0) * 1e6 / floorPings
	f.dedicated = percentile(lat, 0.50)

	ping := e.script.B().Ping().Build().Pin()
	if err := timePings(lat, func() error { return e.script.Do(ctx, ping).Error() }, nil); err != nil {
		return f, fmt.Errorf("PING on the auto-pipelined client: %w", err)
	}
	f.pipelined = percentile(lat, 0.50)
	return f, nil
}

// timePings calls ping len(lat) times unmeasured, then start (when not
// nil), then len(lat) times more, each call's wall time into lat.
func timePings(lat []time.Duration, ping func() error, start func() error) error {
	for range lat {
		if err := ping(); err != nil {
			return err
		}
	}
	if start != nil {
		if err := start(); err != nil {
			return err
		}
	}
	for i := range lat {
		t := time.Now()
		if err := ping(); err != nil {
			return err
		}
		lat[i] = time.Since(t)
	}
	return nil
}

// oneWorkerBound is what the floor bounds at one worker, where a
// transition waits for its round trips one after another.
type oneWorkerBound struct {
	// trips: round trips per transition, the reserve's included; least:
	// those round trips at the floor, in µs (ours' own on a dedicated
	// connection; the script's, and every reserve, on the auto-pipelined
	// one).
	oursTrips, oursLeast, scriptTrips, scriptLeast float64
	// ceiling: the script's measured µs per transition over ours' least,
	// the most ours can reach against it with its round trips; want: the µs
	// per transition 1.5 times the script's throughput allows, and
	// wantTrips how many round trips of its own that leaves ours.
	ceiling, want, wantTrips float64
	// serverLeast: ours' round trips at the server's CPU per PING, in µs.
	serverLeast float64
}

// boundAtOneWorker works it out from the floor f, both sides' wire
// profiles and the script's measured µs per transition at one worker.
func boundAtOneWorker(f floor, ours, script wireProfile, scriptPerT float64) oneWorkerBound {
	ded, pipe := us(f.dedicated), us(f.pipelined)
	b := oneWorkerBound{
		oursTrips:   ours.perTransition + ours.reservePerTransition,
		oursLeast:   ours.perTransition*ded + ours.reservePerTransition*pipe,
		scriptTrips: script.perTransition + script.reservePerTransition,
		scriptLeast: (script.perTransition + script.reservePerTransition) * pipe,
		want:        scriptPerT / 1.5,
	}
	b.ceiling = scriptPerT / b.oursLeast
	b.wantTrips = (b.want - ours.reservePerTransition*pipe) / ded
	b.serverLeast = b.oursTrips * f.server
	return b
}

// printFloor prints the floor and, when both sides ran at one worker, what
// it bounds there (boundAtOneWorker).
func (rep *report) printFloor(out io.Writer) {
	f := rep.floor
	fmt.Fprintf(out, "\nRound-trip floor (PING, one goroutine, %d calls, median)\n", floorPings)
	fmt.Fprintf(out, "  dedicated connection %.1f us (CPU per round trip: client %.1f us, server %.1f us); auto-pipelined client %.1f us\n",
		us(f.dedicated), f.client, f.server, us(f.pipelined))
	o, okO := rep.summarize(sideOurs, 1)
	if !okO || o.transitions == 0 || f.dedicated <= 0 {
		return
	}
	sc, okS := rep.summarize(sideScript, 1)
	perO, perS := 1e6/o.tps(), 0.0
	if okS && sc.transitions > 0 {
		perS = 1e6 / sc.tps()
	}
	b := boundAtOneWorker(f, rep.wire[sideOurs], rep.wire[sideScript], perS)
	fmt.Fprintf(out, "  1 worker, ours: %.2f round trips per transition (%.2f of them the reserve's): at least %.0f us per transition;\n"+
		"    measured %.0f us (%.0f%% of it the floor's)\n", b.oursTrips, rep.wire[sideOurs].reservePerTransition, b.oursLeast, perO, 100*b.oursLeast/perO)
	if perS == 0 {
		return
	}
	fmt.Fprintf(out, "  1 worker, script: %.2f round trips per transition: at least %.0f us; measured %.0f us\n", b.scriptTrips, b.scriptLeast, perS)
	fmt.Fprintf(out, "  so with its round trips ours can reach at most about %.2fx the script's throughput at 1 worker;\n"+
		"    1.5x needs at most %.0f us per transition: with the reserve's, %.2f round trips of its own and nothing else on either end\n",
		b.ceiling, b.want, b.wantTrips)
	// The server's CPU per round trip is mostly socket work: an estimate,
	// since a PING's round trip is not a transaction's, and the server's
	// CPU drifts between the two measurements.
	fmt.Fprintf(out, "  server CPU at 1 worker: ours' %.2f round trips at the floor's %.1f us come to about %.0f us per transition\n"+
		"    (%.2fx the script's measured %.0f us) before any command runs; ours measured %.0f us\n",
		b.oursTrips, f.server, b.serverLeast, b.serverLeast/sc.cpuPerT(), sc.cpuPerT(), o.cpuPerT())
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
