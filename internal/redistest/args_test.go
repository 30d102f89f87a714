package redistest

import (
	"slices"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "  redis-server  --port 6379 ", want: []string{"redis-server", "--port", "6379"}},
		{in: `--save "" --appendonly no`, want: []string{"--save", "", "--appendonly", "no"}},
		{in: `valkey-server --save '' --x "a b"c`, want: []string{"valkey-server", "--save", "", "--x", "a bc"}},
		{in: `--save "`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := splitArgs(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
