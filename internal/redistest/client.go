package redistest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Client returns a client for the code under test, closed by tb.Cleanup.
// It connects as the default user, or as [MinimalUser] when the environment
// variable HOPPER_TEST_ACL is non-empty (the user is created on first use).
// A failure to connect fails the test.
func (s *Server) Client(tb testing.TB) rueidis.Client {
	tb.Helper()
	if !usingACL() {
		return s.connect(tb, rueidis.ClientOption{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), tenSeconds)
	defer cancel()
	if err := s.ensureMinimalUser(ctx); err != nil {
		tb.Fatal(err)
	}
	return s.connect(tb, rueidis.ClientOption{Username: MinimalUser, Password: MinimalUser})
}

// AdminClient returns a client connected as the default user whatever
// HOPPER_TEST_ACL says, closed by tb.Cleanup: for test setup, fault injection
// and running the reference script in comparison tests.
func (s *Server) AdminClient(tb testing.TB) rueidis.Client {
	tb.Helper()
	return s.connect(tb, rueidis.ClientOption{})
}

func (s *Server) connect(tb testing.TB, opt rueidis.ClientOption) rueidis.Client {
	tb.Helper()
	opt.InitAddress = []string{s.Addr()}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("redistest: connect to %s as %q: %v", s.Addr(), userName(opt.Username), err)
	}
	tb.Cleanup(c.Close)
	return c
}

// ensureMinimalUser creates MinimalUser once per running server.
func (s *Server) ensureMinimalUser(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock() // held so that concurrent callers wait for the first
	if s.aclReady {
		return nil
	}
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.addr}, DisableCache: true})
	if err != nil {
		return fmt.Errorf("redistest: connect to %s: %w", s.addr, err)
	}
	defer admin.Close()
	cmd := admin.B().AclSetuser().Username(MinimalUser).Rule(minimalRules()...).Build()
	if err := admin.Do(ctx, cmd).Error(); err != nil {
		return fmt.Errorf("redistest: create ACL user %s: %w", MinimalUser, err)
	}
	s.aclReady = true
	return nil
}

func userName(u string) string {
	if u == "" {
		return "default"
	}
	return u
}

const tenSeconds = 10 * time.Second

// usingACL tells whether clients under test connect as MinimalUser.
func usingACL() bool { return os.Getenv("HOPPER_TEST_ACL") != "" }
