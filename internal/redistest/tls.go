package redistest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/testcontainers/testcontainers-go"
)

// Certs is a test's own certificate authority with a server certificate
// (for 127.0.0.1 and localhost) and a client certificate it signed, as PEM,
// and the same written to files in Dir: ca.pem, server.pem,
// server-key.pem, client.pem and client-key.pem.
type Certs struct {
	Dir                       string
	CA, ServerCert, ServerKey []byte
	ClientCert, ClientKey     []byte
	caCert                    *x509.Certificate
	caKey                     *ecdsa.PrivateKey
}

// NewCerts makes a CA named name and its two certificates, valid for an
// hour, and writes them to a temporary folder of tb's.
func NewCerts(tb testing.TB, name string) *Certs {
	tb.Helper()
	c := &Certs{Dir: tb.TempDir()}
	ca := &x509.Certificate{
		Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	c.CA, c.caCert, c.caKey = c.sign(tb, ca, nil)
	c.ServerCert, c.ServerKey = c.leaf(tb, &x509.Certificate{
		Subject: pkix.Name{CommonName: "redis"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	c.ClientCert, c.ClientKey = c.leaf(tb, &x509.Certificate{
		Subject: pkix.Name{CommonName: "hopper"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	for file, data := range map[string][]byte{"ca.pem": c.CA, "server.pem": c.ServerCert, "server-key.pem": c.ServerKey,
		"client.pem": c.ClientCert, "client-key.pem": c.ClientKey} {
		if err := os.WriteFile(c.Path(file), data, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// Path is the file name in c.Dir.
func (c *Certs) Path(name string) string { return filepath.Join(c.Dir, name) }

// leaf signs a certificate of template's with the CA and returns it and its
// key as PEM.
func (c *Certs) leaf(tb testing.TB, template *x509.Certificate) (certPEM, keyPEM []byte) {
	tb.Helper()
	template.KeyUsage = x509.KeyUsageDigitalSignature
	certPEM, _, key := c.sign(tb, template, c.caCert)
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// sign makes a key and a certificate of template's, signed by parent (nil:
// by itself).
func (c *Certs) sign(tb testing.TB, template, parent *x509.Certificate) ([]byte, *x509.Certificate, *ecdsa.PrivateKey) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	template.SerialNumber = serial
	template.NotBefore, template.NotAfter = time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	signer, signKey := parent, c.caKey
	if parent == nil {
		signer, signKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signer, &key.PublicKey, signKey)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert, key
}

// ClientConfig is a TLS configuration that trusts c's CA and, when mutual,
// shows c's client certificate.
func (c *Certs) ClientConfig(tb testing.TB, mutual bool) *tls.Config {
	tb.Helper()
	cfg, err := c.clientConfig(mutual)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

func (c *Certs) clientConfig(mutual bool) (*tls.Config, error) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.CA)
	cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if mutual {
		pair, err := tls.X509KeyPair(c.ClientCert, c.ClientKey)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// StartTLS runs a Redis container that speaks TLS only, with c's server
// certificate, on the port [Server.Addr] gives; when mutual, it refuses
// clients without a certificate c's CA signed. [MinimalUser] exists on it. Its clients are the
// caller's to make (see [Certs.ClientConfig]): [Server.Client] and the
// faults of this package speak plain TCP.
func StartTLS(ctx context.Context, c *Certs, mutual bool) (*Server, error) {
	auth := "no"
	if mutual {
		auth = "yes"
	}
	var files []testcontainers.ContainerFile
	for name, data := range map[string][]byte{"ca.pem": c.CA, "server.pem": c.ServerCert, "server-key.pem": c.ServerKey} {
		// /data exists in the image and belongs to the server's user.
		files = append(files, testcontainers.ContainerFile{Reader: bytes.NewReader(data), ContainerFilePath: "/data/" + name, FileMode: 0o644})
	}
	cmd := []string{"--save", "", "--appendonly", "no", "--protected-mode", "no",
		"--port", "0", "--tls-port", "6379",
		"--tls-cert-file", "/data/server.pem", "--tls-key-file", "/data/server-key.pem",
		"--tls-ca-cert-file", "/data/ca.pem", "--tls-auth-clients", auth}
	s, err := start(ctx, cmd, testcontainers.WithFiles(files...))
	if err != nil {
		return nil, err
	}
	if err := s.addMinimalUser(ctx, c); err != nil {
		_ = s.Terminate(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

// addMinimalUser creates MinimalUser on a TLS server, whose clients
// connect as that user or as the default one.
func (s *Server) addMinimalUser(ctx context.Context, c *Certs) error {
	cfg, err := c.clientConfig(true)
	if err != nil {
		return err
	}
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, TLSConfig: cfg, DisableCache: true})
	if err != nil {
		return fmt.Errorf("redistest: connect to %s over TLS: %w", s.Addr(), err)
	}
	defer admin.Close()
	if err := admin.Do(ctx, admin.B().AclSetuser().Username(MinimalUser).Rule(minimalRules()...).Build()).Error(); err != nil {
		return fmt.Errorf("redistest: create ACL user %s: %w", MinimalUser, err)
	}
	return nil
}

// TLSClient connects to s with cfg as the default user, closed by
// tb.Cleanup.
func (s *Server) TLSClient(tb testing.TB, cfg *tls.Config) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, TLSConfig: cfg, DisableCache: true})
	if err != nil {
		tb.Fatalf("redistest: connect to %s over TLS: %v", s.Addr(), err)
	}
	tb.Cleanup(c.Close)
	return c
}
