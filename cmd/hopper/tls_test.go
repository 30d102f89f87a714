package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tlsServer runs a TLS-only Redis with certs of its own for one test, and
// returns its rediss:// URL (as the minimal ACL user) and the certs.
func tlsServer(t *testing.T, mutual bool) (string, *redistest.Certs) {
	t.Helper()
	certs := redistest.NewCerts(t, "hopper test CA")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := redistest.StartTLS(ctx, certs, mutual)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Terminate(context.Background()) })
	return fmt.Sprintf("rediss://%s:%s@%s", redistest.MinimalUser, redistest.MinimalUser, s.Addr()), certs
}

// workThenReport runs two workers over a passing suite and then the
// report, each with tlsArgs, and checks the verdict.
func workThenReport(t *testing.T, url string, env []string, tlsArgs ...string) {
	t.Helper()
	dir := fixture(t, map[string]string{"a.sh": "echo a", "b.sh": "echo b", "c.sh": "echo c"})
	build := redistest.BuildID(t)
	var workers []*proc
	for _, w := range []string{"w1", "w2"} {
		args := append([]string{"work", "--build", build, "--worker", w, "--redis", url, "--progress", "off"}, tlsArgs...)
		workers = append(workers, start(t, dir, env, append(args, "a.sh", "b.sh", "c.sh", "--", "sh", "{unit}")...))
	}
	for _, w := range workers {
		require.Equal(t, 0, w.wait(time.Minute), "hopper work: %s", w.stderr)
	}
	summary := filepath.Join(dir, "summary.json")
	code, _, errs := hopper(t, dir, env, append([]string{"report", "--build", build, "--redis", url, "--summary-out", summary}, tlsArgs...)...)
	require.Equal(t, 0, code, errs)
	s := readSummary(t, summary)
	assert.Equal(t, "passed", s.Verdict)
	assert.Equal(t, 3, s.FinalizedCount)
}

// rediss:// with the server's CA given by --redis-ca, or by
// HOPPER_REDIS_CA: a whole build through hopper work and hopper report.
func TestWorkAndReportOverTLS(t *testing.T) {
	url, certs := tlsServer(t, false)
	t.Run("--redis-ca", func(t *testing.T) {
		workThenReport(t, url, baseEnv(), "--redis-ca", certs.Path("ca.pem"))
	})
	t.Run("HOPPER_REDIS_CA", func(t *testing.T) {
		workThenReport(t, url, baseEnv("HOPPER_REDIS_CA="+certs.Path("ca.pem")))
	})
}

// A server whose certificate is not trusted is refused in one line naming
// the URL and the reason, exit 2: its CA is in neither the system roots nor
// the bundle given. --redis-insecure-skip-verify connects, and says so.
func TestUntrustedServerRefused(t *testing.T) {
	url, _ := tlsServer(t, false)
	other := redistest.NewCerts(t, "another CA")
	shown := strings.Replace(url, ":"+redistest.MinimalUser+"@", ":xxxxx@", 1)
	for name, args := range map[string][]string{
		"system roots": nil,
		"wrong CA":     {"--redis-ca", other.Path("ca.pem")},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := hopper(t, t.TempDir(), baseEnv(), append([]string{"report", "--build", "b", "--redis", url}, args...)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.Equal(t, "hopper report: cannot reach Redis at "+shown+" (from --redis): TLS: the server's certificate is signed by an authority not trusted here (give its CA with --redis-ca)\n", errs)
		})
	}
	t.Run("--redis-insecure-skip-verify", func(t *testing.T) {
		code, _, errs := hopper(t, t.TempDir(), baseEnv(), "events", "--build", redistest.BuildID(t), "--redis", url, "--redis-insecure-skip-verify")
		assert.Equal(t, 2, code, "no such build")
		assert.Contains(t, errs, "hopper events: warning: --redis-insecure-skip-verify: the Redis server's certificate is not checked")
		assert.NotContains(t, errs, "TLS:")
	})
}

// Mutual TLS: with the client certificate a build runs; without it the
// server refuses the client, in one line.
func TestMutualTLS(t *testing.T) {
	url, certs := tlsServer(t, true)
	ca := []string{"--redis-ca", certs.Path("ca.pem")}
	workThenReport(t, url, baseEnv(), append(ca, "--redis-cert", certs.Path("client.pem"), "--redis-key", certs.Path("client-key.pem"))...)

	code, _, errs := hopper(t, t.TempDir(), baseEnv(), append([]string{"report", "--build", "b", "--redis", url}, ca...)...)
	assert.Equal(t, 2, code)
	assert.Regexp(t, `^hopper report: cannot reach Redis at rediss://[^ ]+ \(from --redis\): TLS: the server refused this client \(.*certificate required.*\): it may want a client certificate it trusts \(--redis-cert, --redis-key\)\n$`, errs)
}
