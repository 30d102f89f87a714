package report_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/report"
)

func TestRunRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    report.Options
		mention string
	}{
		{"negative poll interval", report.Options{PollInterval: -time.Second}, "PollInterval -1s"},
		{"negative init timeout", report.Options{InitTimeout: -2 * time.Second}, "InitTimeout -2s"},
		{"negative timeout", report.Options{Timeout: -time.Millisecond}, "Timeout -1ms"},
		{"negative inactive timeout", report.Options{InactiveTimeout: -time.Minute}, "InactiveTimeout -1m0s"},
		{"negative min examples", report.Options{MinExamples: -1}, "MinExamples -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := report.Run(context.Background(), nil, "b", tc.opts)
			require.ErrorIsf(t, err, report.ErrInvalidOptions, "got error %v, want %v", err, report.ErrInvalidOptions)
			require.Containsf(t, err.Error(), tc.mention, "got error %q, want it to name %q", err, tc.mention)
			require.Nil(t, r)
		})
	}
}

func TestRunRefusesNoClientAndNoBuild(t *testing.T) {
	_, err := report.Run(context.Background(), nil, "b", report.Options{})
	require.ErrorIs(t, err, report.ErrInvalidOptions)
	require.Contains(t, err.Error(), "nil client")
}
