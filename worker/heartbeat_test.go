package worker

import (
	"testing"
	"time"
)

func TestNextBeat(t *testing.T) {
	const maxUnit, timeout = 900 * time.Second, 180 * time.Second
	tests := []struct {
		name                string
		elapsed             time.Duration
		renewing, abandoned bool
		want                beat
	}{
		{"early", 60 * time.Second, true, false, beatRenew},
		{"just before max unit duration", maxUnit - time.Millisecond, true, false, beatRenew},
		{"at max unit duration", maxUnit, true, false, beatAbandon},
		{"past it, not yet abandoned (Redis was down)", maxUnit + time.Minute, true, false, beatAbandon},
		{"abandoned: hold let go", maxUnit + time.Minute, false, true, beatWait},
		{"stale: hold let go early", time.Minute, false, false, beatWait},
		{"just before abort", maxUnit + timeout - time.Millisecond, false, true, beatWait},
		{"abort", maxUnit + timeout, false, true, beatAbort},
		{"abort even when still renewing", maxUnit + timeout, true, false, beatAbort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextBeat(tt.elapsed, maxUnit, timeout, tt.renewing, tt.abandoned); got != tt.want {
				t.Errorf("nextBeat(%v, renewing %v, abandoned %v) = %v, want %v", tt.elapsed, tt.renewing, tt.abandoned, got, tt.want)
			}
		})
	}
}

func TestHeartbeatInterval(t *testing.T) {
	tests := []struct{ timeout, want time.Duration }{
		{180 * time.Second, 30 * time.Second}, // capped
		{90 * time.Second, 30 * time.Second},
		{60 * time.Second, 20 * time.Second},
		{3 * time.Second, time.Second},
		{3 * time.Millisecond, time.Millisecond},
	}
	for _, tt := range tests {
		if got := HeartbeatInterval(tt.timeout); got != tt.want {
			t.Errorf("heartbeat interval for timeout %v = %v, want %v", tt.timeout, got, tt.want)
		}
	}
}
