package queue

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCallRefusesBadArguments(t *testing.T) {
	ok := map[string][]string{
		"finalize":   {"finalize", "w1", "1000", "units", "1-0", "1", "u1", "passed", "12"},
		"requeue":    {"requeue", "w1", "1000", "units:priority", "1-0", "2", "u1", "file", "1", "0.5", "3.5", "summary", `[{"class":"E"}]`},
		"reclaim":    {"reclaim", "w1", "1000", "0", "3"},
		"liveness":   {"liveness", "w1", "1000"},
		"prebuilt":   {"worker_error", "w1", "1000", `{"type":"worker_error"}`},
		"accounting": {"delivery_accounting", "w{1}", "1000", "units", "1-0", "spec/{a}_spec.rb"},
	}
	for name, argv := range ok {
		if _, err := parseCall(argv); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := []struct {
		argv []string
		says string
	}{
		{nil, "empty"},
		{[]string{"teleport", "w1", "1"}, "unknown transition mode teleport"},
		{[]string{"heartbeat", "w1", "1000", "units", "1-0", "1"}, "takes 7 arguments"},
		{[]string{"liveness", "w1", "0"}, "ttl_ms 0"},
		{[]string{"liveness", "w1", "1e3"}, `ttl_ms "1e3"`},
		{[]string{"liveness", "", "1000"}, "worker id is empty"},
		{[]string{"liveness", "w\xff", "1000"}, "UTF-8"},
		{[]string{"reclaim", "w1", "1000", "-1", "3"}, "timeout_ms -1"},
		{[]string{"reclaim", "w1", "1000", "0", "NaN"}, `max_reclaims "NaN"`},
		{[]string{"heartbeat", "w1", "1000", "stream", "1-0", "1", "u1"}, `"stream"`},
		{[]string{"heartbeat", "w1", "1000", "units", "x", "1", "u1"}, `entry id "x"`},
		{[]string{"heartbeat", "w1", "1000", "units", "1-0", "0", "u1"}, "delivery_count 0"},
		{[]string{"heartbeat", "w1", "1000", "units", "1-0", "1", strings.Repeat("u", MaxIDBytes+1)}, "unit id is 1025 bytes"},
		{[]string{"finalize", "w1", "1000", "units", "1-0", "1", "u1", "maybe", "1"}, `outcome "maybe"`},
		{[]string{"finalize", "w1", "1000", "units", "1-0", "1", "u1", "passed", "-5"}, "duration_ms"},
		{[]string{"finalize", "w1", "1000", "units", "1-0", "1", "u1", "failed", "1", "x", "{"}, "not valid JSON"},
		{[]string{"requeue", "w1", "1000", "units", "1-0", "1", "u1", "file", "1", "1.5", "1"}, "tolerance 1.5"},
		{[]string{"requeue", "w1", "1000", "units", "1-0", "1", "u1", "file", "-1", "1", "1"}, "max_requeues -1"},
		{[]string{"requeue", "w1", "1000", "units", "1-0", "1", "u1", "", "1", "1", "1"}, "unit type is empty"},
		{[]string{"abandoned", "w1", "1000", "units", "1-0", "1", "u1", "inf"}, "elapsed_ms"},
		{[]string{"stale_rejected", "w1", "1000", "[1]"}, "prebuilt event"},
	}
	for _, c := range bad {
		_, err := parseCall(c.argv)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: got %v, want ErrInvalidArgument saying %q", c.argv, err, c.says)
		}
	}
}

// FuzzParseCall: any ARGV is either refused with ErrInvalidArgument or parsed
// into a call whose parts the typed API accepts; parsing never panics.
func FuzzParseCall(f *testing.F) {
	seeds := [][]string{
		{"finalize", "w1", "1000", "units", "1-0", "1", "u1", "passed", "12", "", ""},
		{"requeue", "w1", "1000", "units:priority", "1-0", "2", "u1", "file", "1", "0.5", "3.5", "s", "[]"},
		{"reclaim", "w1", "1000", "0", "3"},
		{"delivery_accounting", "w1", "1000", "units", "1-0", "u1"},
		{"worker_error", "w1", "1000", "{}"},
	}
	for _, s := range seeds {
		f.Add(strings.Join(s, "\x1f"))
	}
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x1f")
		c, err := parseCall(argv)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidArgument", argv, err)
			}
			return
		}
		if c.ttlMS < 1 {
			t.Fatalf("%q: ttl %d accepted", argv, c.ttlMS)
		}
		switch c.mode {
		case ModeHeartbeat, ModeFinalize, ModeRequeue, ModeAbandoned, ModeDeliveryAccounting:
			if err := c.reservation.check(); err != nil {
				t.Fatalf("%q: parsed a reservation the typed API refuses: %v", argv, err)
			}
		}
		if err := c.result.check(); err != nil {
			t.Fatalf("%q: parsed a result the typed API refuses: %v", argv, err)
		}
	})
}
