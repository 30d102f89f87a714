package machinery

import (
	"fmt"
	"testing"
	"time"
)

// The transitions of a reservation, as package queue names them, and
// which one it predicts after which.
const (
	ModeDeliveryAccounting = "delivery_accounting"
	ModeHeartbeat          = "heartbeat"
	ModeFinalize           = "finalize"
	ModeRequeue            = "requeue"
	ModeAbandoned          = "abandoned"
)

func nextMode(mode string) string {
	switch mode {
	case ModeDeliveryAccounting:
		return ModeHeartbeat
	case ModeHeartbeat:
		return ModeFinalize
	}
	return ""
}

func settles(mode string) bool {
	return mode == ModeFinalize || mode == ModeRequeue || mode == ModeAbandoned
}

// paceCall is one transition a worker calls, at ms milliseconds, and
// whether its commit should then keep reads.
type paceCall struct {
	worker string
	mode   string
	ms     int
	keeps  bool
}

func TestKeptPace(t *testing.T) {
	const (
		acct = ModeDeliveryAccounting
		hb   = ModeHeartbeat
		fin  = ModeFinalize
	)
	cases := []struct {
		name  string
		calls []paceCall
	}{
		{"an unknown worker is presumed quick", []paceCall{
			{"w1", acct, 0, true},
		}},
		{"transitions that predict nothing keep nothing", []paceCall{
			{"w1", fin, 0, false},
			{"w1", ModeRequeue, 10, false},
			{"w1", ModeAbandoned, 20, false},
		}},
		{"back to back units keep reads throughout", []paceCall{
			{"w1", acct, 0, true}, {"w1", hb, 5, true}, {"w1", fin, 10, false},
			{"w1", acct, 15, true}, {"w1", hb, 20, true}, {"w1", fin, 25, false},
		}},
		{"a pair within the window exactly is quick", []paceCall{
			{"w1", acct, 0, true}, {"w1", hb, 1000, true}, {"w1", fin, 2000, false},
			{"w1", acct, 2001, true},
		}},
		{"a heartbeat later than the window stops reads after accounting", []paceCall{
			{"w1", acct, 0, true}, {"w1", hb, 1200, true}, {"w1", fin, 1210, false},
			{"w1", acct, 1220, false},
		}},
		{"heartbeats apart stop reads after a heartbeat", []paceCall{
			{"w1", acct, 0, true}, {"w1", hb, 1200, true}, {"w1", hb, 2400, false},
			{"w1", hb, 3600, false},
		}},
		{"a heartbeat after a heartbeat is a miss however quick", []paceCall{
			{"w1", hb, 0, true}, {"w1", hb, 10, false},
		}},
		{"a finalize straight after accounting is a miss", []paceCall{
			{"w1", acct, 0, true}, {"w1", fin, 10, false}, {"w1", acct, 20, false},
		}},
		{"a quick requeue or abandon in place of the predicted finalize keeps the pace", []paceCall{
			{"w1", hb, 0, true}, {"w1", ModeRequeue, 10, false}, {"w1", hb, 20, true},
			{"w1", ModeAbandoned, 30, false}, {"w1", hb, 40, true},
		}},
		{"a late requeue in place of the predicted finalize is a miss", []paceCall{
			{"w1", hb, 0, true}, {"w1", ModeRequeue, 1500, false}, {"w1", hb, 1510, false},
		}},
		{"a slow worker gets reads again once a pair comes quickly", []paceCall{
			{"w1", acct, 0, true}, {"w1", hb, 5000, true}, {"w1", fin, 5010, false},
			{"w1", acct, 6000, false}, {"w1", hb, 6100, true}, {"w1", fin, 6110, false},
			{"w1", acct, 6200, true},
		}},
		{"each kind of pair is judged on its own", []paceCall{
			{"w1", acct, 0, true}, {"w1", hb, 3000, true}, {"w1", fin, 3010, false},
			{"w1", acct, 3020, false}, {"w1", hb, 9000, true},
		}},
		{"workers are judged apart", []paceCall{
			{"w1", acct, 0, true}, {"w2", acct, 10, true},
			{"w1", hb, 2000, true}, {"w2", hb, 20, true},
			{"w1", acct, 2010, false}, {"w2", acct, 30, true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := KeptPace{Window: time.Second, Limit: 10, Next: nextMode, Settles: settles}
			start := time.Now()
			for i, c := range tc.calls {
				p.Called(c.worker, c.mode, start.Add(time.Duration(c.ms)*time.Millisecond))
				if got := p.Keeps(c.worker, c.mode); got != c.keeps {
					t.Errorf("call %d (%s %s at %d ms): keeps %v, want %v", i, c.worker, c.mode, c.ms, got, c.keeps)
				}
			}
		})
	}
}

// TestKeptPaceForgetsTheIdlest: past its limit, KeptPace forgets the
// worker idle longest, which is then presumed quick again, and keeps
// what it knows of the others.
func TestKeptPaceForgetsTheIdlest(t *testing.T) {
	p := KeptPace{Window: time.Second, Limit: 3, Next: nextMode, Settles: settles}
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for i := range 3 {
		w := fmt.Sprintf("w%d", i)
		p.Called(w, ModeDeliveryAccounting, at(i))
		p.Called(w, ModeFinalize, at(i+10)) // a miss: slow after accounting
	}
	p.Called("w0", ModeDeliveryAccounting, at(100)) // w1 is now the idlest
	p.Called("w3", ModeDeliveryAccounting, at(101))
	if len(p.workers) != 3 {
		t.Fatalf("remembers %d workers, limit 3", len(p.workers))
	}
	for w, want := range map[string]bool{"w0": false, "w1": true, "w2": false, "w3": true} {
		if got := p.Keeps(w, ModeDeliveryAccounting); got != want {
			t.Errorf("%s keeps %v after accounting, want %v", w, got, want)
		}
	}
	if _, ok := p.workers["w1"]; ok {
		t.Error("w1, the idlest, still remembered")
	}
}
