package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/redis/rueidis"
)

// tlsFiles is how a rediss:// connection checks the server and shows
// itself, from --redis-ca, --redis-cert, --redis-key and
// --redis-insecure-skip-verify (docs/design.md#tls). The zero value is the
// system roots and no client certificate.
type tlsFiles struct {
	CA, Cert, Key string
	Insecure      bool
	// from names where each file came from, for messages: "--redis-ca" or
	// "HOPPER_REDIS_CA".
	caFrom, certFrom, keyFrom string
}

func (t tlsFiles) any() bool { return t.CA != "" || t.Cert != "" || t.Key != "" || t.Insecure }

type tlsFlags struct {
	ca, cert, key *string
	insecure      *bool
}

func addTLSFlags(f *flagSet) tlsFlags {
	return tlsFlags{ca: f.String("redis-ca", ""), cert: f.String("redis-cert", ""), key: f.String("redis-key", ""),
		insecure: f.Bool("redis-insecure-skip-verify")}
}

// resolve applies the fallbacks (HOPPER_REDIS_CA, HOPPER_REDIS_CERT,
// HOPPER_REDIS_KEY) and checks the combination against t's Redis, which
// must be a rediss:// URL when any of them is given; from the environment
// alone they are left unused when there is no Redis (hopper run on its
// embedded server). Each file is read here, so that a bad one is a usage
// error before anything connects.
func (tf tlsFlags) resolve(f *flagSet, env Env, t target) (tlsFiles, error) {
	var out tlsFiles
	out.CA, out.caFrom = flagOrEnv(f, "redis-ca", *tf.ca, env, "HOPPER_REDIS_CA")
	out.Cert, out.certFrom = flagOrEnv(f, "redis-cert", *tf.cert, env, "HOPPER_REDIS_CERT")
	out.Key, out.keyFrom = flagOrEnv(f, "redis-key", *tf.key, env, "HOPPER_REDIS_KEY")
	out.Insecure = *tf.insecure
	if !out.any() {
		return out, nil
	}
	given := out.firstFlag(f)
	switch {
	case t.Redis == "" && given == "":
		return tlsFiles{}, nil
	case t.Redis == "":
		return out, usagef("--%s is for a TLS connection: give --redis rediss://HOST:PORT too", given)
	case !isTLSURL(t.Redis):
		return out, usagef("%s is set, but %s %q is not a TLS URL: write rediss://", out.firstName(given), t.redisFrom, redact(t.Redis))
	case out.Cert != "" && out.Key == "":
		return out, usagef("%s %q needs its private key: give --redis-key FILE too", out.certFrom, out.Cert)
	case out.Key != "" && out.Cert == "":
		return out, usagef("%s %q needs its certificate: give --redis-cert FILE too", out.keyFrom, out.Key)
	case out.Insecure && out.CA != "":
		return out, usagef("--redis-insecure-skip-verify checks no certificate, so %s %q would be unused: give one or the other", out.caFrom, out.CA)
	}
	_, err := out.config(&tls.Config{})
	return out, err
}

// flagOrEnv is the flag's value when it was given, else the variable's.
func flagOrEnv(f *flagSet, flagName, value string, env Env, variable string) (string, string) {
	if f.Given(flagName) {
		return strings.TrimSpace(value), "--" + flagName
	}
	v, _ := env.first(variable)
	return v, variable
}

// firstFlag names the first TLS setting given on the command line, "" when
// all came from the environment.
func (t tlsFiles) firstFlag(f *flagSet) string {
	for _, n := range []string{"redis-ca", "redis-cert", "redis-key", "redis-insecure-skip-verify"} {
		if f.Given(n) {
			return n
		}
	}
	return ""
}

func (t tlsFiles) firstName(flag string) string {
	switch {
	case flag != "":
		return "--" + flag
	case t.CA != "":
		return t.caFrom
	case t.Cert != "":
		return t.certFrom
	}
	return t.keyFrom
}

func isTLSURL(raw string) bool {
	scheme, _, _ := strings.Cut(raw, "://")
	return scheme == "rediss" || scheme == "valkeys"
}

// config completes base, the TLS configuration rueidis made of a rediss://
// URL (server name, minimum version), with the CA bundle added to the
// system roots and the client certificate.
func (t tlsFiles) config(base *tls.Config) (*tls.Config, error) {
	c := base.Clone()
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, usagef("%s %q cannot be read: %v", t.caFrom, t.CA, pathless(err))
		}
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, usagef("%s %q holds no PEM certificate", t.caFrom, t.CA)
		}
		c.RootCAs = roots
	}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, usagef("%s %q with %s %q: %v", t.certFrom, t.Cert, t.keyFrom, t.Key, pathless(err))
		}
		c.Certificates = []tls.Certificate{pair}
	}
	c.InsecureSkipVerify = c.InsecureSkipVerify || t.Insecure
	return c, nil
}

// pathless is a file error without the path, which the message names
// already.
func pathless(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// applyTLS sets opt's TLS configuration from t, for a rediss:// URL.
func applyTLS(opt *rueidis.ClientOption, t tlsFiles) error {
	if opt.TLSConfig == nil || !t.any() {
		return nil
	}
	c, err := t.config(opt.TLSConfig)
	if err != nil {
		return err
	}
	opt.TLSConfig = c
	return nil
}

// insecureWarning is printed on every run with --redis-insecure-skip-verify
// (or rueidis's ?skip_verify=true).
const insecureWarning = "warning: --redis-insecure-skip-verify: the Redis server's certificate is not checked, so anyone on the network path can read and change the build"

// tlsReason says in words why a TLS connection failed, or "" when err is
// not about TLS.
func tlsReason(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var op *net.OpError
	var record tls.RecordHeaderError
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is signed by an authority not trusted here (give its CA with --redis-ca)"
	case errors.As(err, &host):
		return fmt.Sprintf("the server's certificate is not valid for this host: %v", host.Error())
	case errors.As(err, &invalid):
		return fmt.Sprintf("the server's certificate is not valid: %v", invalid.Error())
	case errors.As(err, &op) && op.Op == "remote error":
		return fmt.Sprintf("the server refused this client (%v): it may want a client certificate it trusts (--redis-cert, --redis-key)", op.Err)
	case errors.As(err, &record):
		return "the server does not speak TLS on this port (use redis:// for a plain connection)"
	}
	var verify *tls.CertificateVerificationError
	if errors.As(err, &verify) {
		return fmt.Sprintf("the server's certificate was refused: %v", verify.Err)
	}
	return ""
}
