package events

import "testing"

func TestSignificantDigits(t *testing.T) {
	cases := map[float64]float64{
		1234.5678901234567: 1234.5678901235,
		1500:               1500,
		0.1:                0.1,
		123456789012345678: 123456789012350000,
	}
	for in, want := range cases {
		if got := significant(in); got != want {
			t.Errorf("significant(%v): got %v, want %v", in, got, want)
		}
	}
}
