package machinery

import (
	"testing"
	"time"
)

func TestLookEvery(t *testing.T) {
	for _, c := range []struct {
		timeoutMS int64
		want      time.Duration
	}{
		{1, 125 * time.Microsecond},
		{400, 50 * time.Millisecond},
		{8000, time.Second},
		{60000, time.Second},
	} {
		if got := LookEvery(c.timeoutMS); got != c.want {
			t.Errorf("LookEvery(%d ms) = %v, want %v", c.timeoutMS, got, c.want)
		}
	}
}

func TestReclaimPace(t *testing.T) {
	var p ReclaimPace
	t0 := time.Unix(1000, 0)
	if !p.Due(400, t0) {
		t.Fatal("no look yet: due")
	}
	p.Looked(400, t0, true)
	if p.Due(400, t0.Add(49*time.Millisecond)) {
		t.Error("49 ms after a quiet look on a 400 ms timeout: not due")
	}
	if !p.Due(400, t0.Add(50*time.Millisecond)) {
		t.Error("50 ms after: due")
	}
	if !p.Due(800, t0.Add(time.Millisecond)) {
		t.Error("another timeout has its own looks: due")
	}
	p.Looked(400, t0.Add(-time.Second), true)
	if p.Due(400, t0.Add(10*time.Millisecond)) {
		t.Error("an older quiet look moves the latest back")
	}
	p.Looked(400, t0.Add(20*time.Millisecond), false)
	if !p.Due(400, t0.Add(21*time.Millisecond)) {
		t.Error("a look that found something makes the next one due at once")
	}
}
