package integration

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The library takes TLS through the rueidis client its caller builds: a
// whole build (worker.Run, report.Run) over a *tls.Config that trusts the
// test's CA, with and without a client certificate; a configuration that
// trusts another CA cannot connect at all.
func TestLibraryOverTLS(t *testing.T) {
	certs := redistest.NewCerts(t, "hopper test CA")
	for _, mutual := range []bool{false, true} {
		t.Run(fmt.Sprintf("mutual=%v", mutual), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := redistest.StartTLS(ctx, certs, mutual)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Terminate(context.Background()) })

			c := s.TLSClient(t, certs.ClientConfig(t, mutual))
			id := redistest.BuildID(t)
			suite := worker.Suite{Units: units(4), UnitType: "package", Command: "go test {unit}"}
			cfg := worker.Config{BuildID: id, WorkerID: "ci-1", Timeout: 2 * time.Second,
				InitTimeout: 10 * time.Second, Block: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond,
				Output: io.Discard, Log: io.Discard}
			require.NoError(t, worker.Run(ctx, c, suite, cfg, passWith))
			r, err := report.Run(ctx, c, id, report.Options{PollInterval: 20 * time.Millisecond, Timeout: 10 * time.Second})
			require.NoError(t, err)
			assert.Equal(t, report.VerdictPassed, r.Verdict)

			other := redistest.NewCerts(t, "another CA")
			_, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, TLSConfig: other.ClientConfig(t, mutual), DisableCache: true})
			var unknown x509.UnknownAuthorityError
			assert.True(t, errors.As(err, &unknown), "a server signed by an untrusted CA: got %v", err)
			if mutual {
				_, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, TLSConfig: certs.ClientConfig(t, false), DisableCache: true})
				assert.ErrorContains(t, err, "certificate required", "a client without a certificate")
			}
		})
	}
}
