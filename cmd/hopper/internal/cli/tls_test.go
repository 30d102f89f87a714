package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Bad TLS settings are usage errors naming the flag or variable and the
// value, before anything connects (127.0.0.1:1 refuses).
func TestTLSUsageErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	report := []string{"report", "--build", "b"}
	for _, tc := range []struct {
		env  Env
		args []string
		want string
	}{
		{nil, []string{"--redis", "rediss://127.0.0.1:1", "--redis-cert", notPEM},
			`hopper report: --redis-cert "` + notPEM + `" needs its private key: give --redis-key FILE too`},
		{nil, []string{"--redis", "rediss://127.0.0.1:1", "--redis-key", notPEM},
			`--redis-key "` + notPEM + `" needs its certificate: give --redis-cert FILE too`},
		{nil, []string{"--redis", "rediss://127.0.0.1:1", "--redis-ca", missing},
			`--redis-ca "` + missing + `" cannot be read: no such file or directory`},
		{Env{"HOPPER_REDIS_CA": missing}, []string{"--redis", "rediss://127.0.0.1:1"},
			`HOPPER_REDIS_CA "` + missing + `" cannot be read: no such file or directory`},
		{nil, []string{"--redis", "rediss://127.0.0.1:1", "--redis-ca", notPEM},
			`--redis-ca "` + notPEM + `" holds no PEM certificate`},
		{nil, []string{"--redis", "rediss://127.0.0.1:1", "--redis-cert", notPEM, "--redis-key", missing},
			`--redis-cert "` + notPEM + `" with --redis-key "` + missing + `": no such file or directory`},
		{nil, []string{"--redis", "redis://u:secret@127.0.0.1:1", "--redis-ca", notPEM},
			`--redis-ca is set, but --redis "redis://u:xxxxx@127.0.0.1:1" is not a TLS URL: write rediss://`},
		{Env{"HOPPER_REDIS_CA": notPEM, "REDIS_URL": "127.0.0.1:1"}, nil,
			`HOPPER_REDIS_CA is set, but REDIS_URL "127.0.0.1:1" is not a TLS URL`},
		{nil, []string{"--redis", "rediss://127.0.0.1:1", "--redis-ca", notPEM, "--redis-insecure-skip-verify"},
			`--redis-insecure-skip-verify checks no certificate, so --redis-ca "` + notPEM + `" would be unused`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := runMain(tc.env, append(report, tc.args...)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.Contains(t, errs, tc.want)
			assert.Contains(t, errs, "Run 'hopper report --help' for usage.")
		})
	}
	t.Run("run without --redis", func(t *testing.T) {
		_, _, errs := runMain(nil, "run", "--redis-ca", notPEM, "u", "--", "true")
		assert.Contains(t, errs, "hopper run: --redis-ca is for a TLS connection: give --redis rediss://HOST:PORT too")
	})
}

// From the environment alone, a CA is left unused by hopper run on its
// embedded server: the variable may be set for the other commands.
func TestTLSFromEnvIgnoredWithoutRedis(t *testing.T) {
	f := newFlagSet("run")
	tf := addTargetFlags(f)
	if _, _, err := f.Parse(nil); err != nil {
		t.Fatal(err)
	}
	tg, err := tf.resolve(f, Env{"HOPPER_REDIS_CA": "/no/such/ca.pem"}, false)
	assert.NoError(t, err)
	assert.False(t, tg.TLS.any())
}

// Each kind of TLS failure is told in words; other errors are not TLS's.
func TestTLSReason(t *testing.T) {
	cert := &x509.Certificate{DNSNames: []string{"redis.internal"}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, "signed by an authority not trusted here (give its CA with --redis-ca)"},
		{&tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: cert, Host: "cache.internal"}}, "not valid for this host: x509: certificate is valid for redis.internal, not cache.internal"},
		{x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired, Detail: "since yesterday"}, "the server's certificate is not valid: x509: certificate has expired or is not yet valid: since yesterday"},
		{&net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}, "the server refused this client (tls: certificate required)"},
		{fmt.Errorf("dial: %w", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), "does not speak TLS on this port"},
	} {
		assert.Contains(t, tlsReason(tc.err), tc.want, "%v", tc.err)
	}
	assert.Empty(t, tlsReason(&net.OpError{Op: "dial", Err: errors.New("connection refused")}))
	assert.Empty(t, tlsReason(errors.New("NOAUTH Authentication required")))
}
