package bench

// Tests of the harness's pure helpers; they run in `make test`, without
// Redis.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_exec:calls=3,usec=120,usec_per_call=40.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_xinfo|stream:calls=1,usec=9,usec_per_call=9.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hset:calls=6,usec=30,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n"
	got, err := parseCommandStats(info)
	require.NoError(t, err)
	assert.Equal(t, map[string]cmdStat{"exec": {3, 120}, "xinfo|stream": {1, 9}, "hset": {6, 30}}, got)

	_, err = parseCommandStats("cmdstat_get:calls=x,usec=1\r\n")
	assert.Error(t, err)
}

func TestParseInfoFields(t *testing.T) {
	got := parseInfoFields("# CPU\r\nused_cpu_sys:1.5\r\nused_cpu_user:0.25\r\n\r\n")
	assert.Equal(t, map[string]string{"used_cpu_sys": "1.5", "used_cpu_user": "0.25"}, got)
}

func TestCommandName(t *testing.T) {
	tests := []struct {
		tokens []string
		want   string
	}{
		{nil, ""},
		{[]string{"XADD", "k", "*", "f", "v"}, "xadd"},
		{[]string{"XINFO", "STREAM", "k"}, "xinfo|stream"},
		{[]string{"CONFIG", "RESETSTAT"}, "config|resetstat"},
		{[]string{"EVALSHA", "abc", "0"}, "evalsha"},
	}
	for _, tt := range tests {
		if got := commandName(tt.tokens); got != tt.want {
			t.Errorf("commandName(%q) = %q, want %q", tt.tokens, got, tt.want)
		}
	}
}

// Nested commands are left out of the server time: their usec is already in
// EXEC's or EVALSHA's.
func TestClassifierServerUsec(t *testing.T) {
	stats := map[string]cmdStat{
		"watch": {1, 2}, "hget": {2, 4}, "multi": {1, 1}, "exec": {1, 50},
		"xadd": {1, 20}, "hset": {1, 10}, "info": {2, 100}, "unwatch": {1, 3},
	}
	ours := classifier{
		sentTop:    map[string]bool{"watch": true, "hget": true, "multi": true, "exec": true},
		sentNested: map[string]bool{"xadd": true, "hset": true},
	}
	assert.EqualValues(t, 2+4+1+50+3, ours.serverUsec(stats), "unseen unwatch counts as top level")
	assert.Empty(t, ours.ambiguous())

	script := classifier{sentTop: map[string]bool{"evalsha": true, "xreadgroup": true}, unseenNested: true}
	stats = map[string]cmdStat{"evalsha": {2, 100}, "xreadgroup": {4, 8}, "xadd": {2, 30}, "config|resetstat": {1, 9}}
	assert.EqualValues(t, 108, script.serverUsec(stats))
	assert.Equal(t, nested, script.class("xadd"))
	assert.Equal(t, harness, script.class("client|setinfo"))

	both := classifier{sentTop: map[string]bool{"set": true}, sentNested: map[string]bool{"set": true}}
	assert.Equal(t, []string{"set"}, both.ambiguous())
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		d    []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.99, 10 * time.Millisecond},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.9, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.d, tt.p); got != tt.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tt.d, tt.p, got, tt.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	t.Setenv("HOPPER_BENCH_UNITS", "500")
	t.Setenv("HOPPER_BENCH_WORKERS", "2, 4")
	t.Setenv("HOPPER_BENCH_ROUNDS", "3")
	t.Setenv("HOPPER_REFERENCE_SCRIPT", "")
	t.Setenv("HOPPER_BENCH_CTX", "")
	t.Setenv("HOPPER_BENCH_API", "")
	cfg, err := loadConfig()
	require.NoError(t, err)
	assert.Equal(t, config{units: 500, workers: []int{2, 4}, rounds: 3, ctx: "cancel", api: apiTyped}, cfg)

	t.Setenv("HOPPER_BENCH_API", "transition")
	cfg, err = loadConfig()
	require.NoError(t, err)
	assert.Equal(t, apiTransition, cfg.api)
	t.Setenv("HOPPER_BENCH_API", "lua")
	_, err = loadConfig()
	assert.ErrorContains(t, err, `HOPPER_BENCH_API="lua"`)
	t.Setenv("HOPPER_BENCH_API", "")

	t.Setenv("HOPPER_BENCH_CTX", "deadline")
	cfg, err = loadConfig()
	require.NoError(t, err)
	assert.Equal(t, "deadline", cfg.ctx)

	t.Setenv("HOPPER_BENCH_WORKERS", "2,x")
	_, err = loadConfig()
	assert.Error(t, err)
}

func TestBoundAtOneWorker(t *testing.T) {
	f := floor{dedicated: 50 * time.Microsecond, pipelined: 70 * time.Microsecond, server: 30}
	ours := wireProfile{perTransition: 2, reservePerTransition: 0.5}
	script := wireProfile{perTransition: 1, reservePerTransition: 0.5}
	b := boundAtOneWorker(f, ours, script, 180)
	assert.InDelta(t, 2.5, b.oursTrips, 1e-9)
	assert.InDelta(t, 2*50+0.5*70, b.oursLeast, 1e-9)
	assert.InDelta(t, 1.5, b.scriptTrips, 1e-9)
	assert.InDelta(t, 1.5*70, b.scriptLeast, 1e-9)
	assert.InDelta(t, 180.0/135, b.ceiling, 1e-9)
	assert.InDelta(t, 120, b.want, 1e-9)
	assert.InDelta(t, (120-35)/50.0, b.wantTrips, 1e-9)
	assert.InDelta(t, 75, b.serverLeast, 1e-9)
}
