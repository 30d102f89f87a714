package redistest

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/redis/rueidis"
)

// BridgeAddr returns the server's address on Docker's bridge network
// (container IP, port 6379), which this machine reaches directly. Traffic to
// it skips docker-proxy, the userland forwarder behind the mapped loopback
// port, which otherwise adds two socket hops to every round trip: a
// benchmark that counts round trips should not pay for the test rig.
func (s *Server) BridgeAddr(ctx context.Context) (string, error) {
	ip, err := s.ctr.ContainerIP(ctx)
	if err != nil {
		return "", fmt.Errorf("redistest: container IP: %w", err)
	}
	if ip == "" {
		return "", fmt.Errorf("redistest: container has no bridge IP")
	}
	return net.JoinHostPort(ip, "6379"), nil
}

// ClientAt is Client (or AdminClient, when admin is set) connected to addr
// instead of the mapped port, e.g. to BridgeAddr; each tune may change the
// client's options before it connects (a benchmark's variants).
func (s *Server) ClientAt(tb testing.TB, addr string, admin bool, tune ...func(*rueidis.ClientOption)) rueidis.Client {
	tb.Helper()
	opt := rueidis.ClientOption{}
	if !admin && usingACL() {
		ctx, cancel := context.WithTimeout(context.Background(), tenSeconds)
		defer cancel()
		if err := s.ensureMinimalUser(ctx); err != nil {
			tb.Fatal(err)
		}
		opt.Username, opt.Password = MinimalUser, MinimalUser
	}
	opt.InitAddress = []string{addr}
	opt.DisableCache = true
	for _, t := range tune {
		t(&opt)
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("redistest: connect to %s: %v", addr, err)
	}
	tb.Cleanup(c.Close)
	return c
}
