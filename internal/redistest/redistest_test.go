package redistest_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hopper-queue/hopper/internal/redistest"
)

var srv *redistest.Server

func TestMain(m *testing.M) { os.Exit(redistest.Main(m, &srv)) }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestPing(t *testing.T) {
	ctx := ctxFor(t, 5*time.Second)
	if !strings.HasPrefix(srv.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want 127.0.0.1:port", srv.Addr())
	}
	for name, c := range map[string]rueidis.Client{"Client": srv.Client(t), "AdminClient": srv.AdminClient(t)} {
		got, err := c.Do(ctx, c.B().Ping().Build()).ToString()
		if err != nil || got != "PONG" {
			t.Errorf("%s: PING = %q, %v; want PONG", name, got, err)
		}
	}
}

// The minimal user refuses EVAL and the admin commands but keeps optimistic
// transactions on hopper's keys, which is what the code under test runs
// instead of scripts.
func TestMinimalUser(t *testing.T) {
	t.Setenv("HOPPER_TEST_ACL", "1") // whatever the run says: this test is about ACL mode
	ctx := ctxFor(t, 10*time.Second)
	c := srv.Client(t)
	admin := srv.AdminClient(t)

	for _, cmd := range [][]string{
		{"EVAL", "return 1", "0"}, {"INFO", "server"}, {"CONFIG", "GET", "maxmemory"},
		{"CLIENT", "LIST"}, {"ACL", "WHOAMI"}, {"SCAN", "0"}, {"FLUSHALL"}, {"GET", "other"},
	} {
		err := c.Do(ctx, c.B().Arbitrary(cmd...).Build()).Error()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("%v as %s: got error %v, want NOPERM", cmd, redistest.MinimalUser, err)
		}
	}
	if got, err := admin.Do(ctx, admin.B().Eval().Script("return 1").Numkeys(0).Build()).AsInt64(); err != nil || got != 1 {
		t.Errorf("EVAL as default user = %d, %v; want 1 (the server itself runs scripts)", got, err)
	}

	key := "hopper:{" + redistest.BuildID(t) + "}:k"
	transact := func(between func()) ([]rueidis.RedisResult, error) {
		var resps []rueidis.RedisResult
		err := c.Dedicated(func(d rueidis.DedicatedClient) error {
			if err := d.Do(ctx, d.B().Watch().Key(key).Build()).Error(); err != nil {
				return err
			}
			between()
			resps = d.DoMulti(ctx,
				d.B().Multi().Build(),
				d.B().Hincrby().Key(key).Field("n").Increment(1).Build(),
				d.B().Exec().Build())
			return nil
		})
		return resps, err
	}

	resps, err := transact(func() {})
	if err != nil {
		t.Fatalf("WATCH: %v", err)
	}
	exec, err := resps[2].ToArray()
	if err != nil || len(exec) != 1 {
		t.Fatalf("EXEC = %v, %v; want one reply", exec, err)
	}
	if n, err := exec[0].AsInt64(); err != nil || n != 1 {
		t.Errorf("HINCRBY in EXEC = %d, %v; want 1", n, err)
	}

	// A write between WATCH and EXEC aborts the transaction: EXEC answers nil.
	resps, err = transact(func() {
		if err := admin.Do(ctx, admin.B().Hset().Key(key).FieldValue().FieldValue("n", "10").Build()).Error(); err != nil {
			t.Errorf("HSET between WATCH and EXEC: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("WATCH: %v", err)
	}
	if err := resps[2].Error(); !rueidis.IsRedisNil(err) {
		t.Errorf("EXEC after a conflicting write: got %v, want nil reply", err)
	}
	if got, _ := admin.Do(ctx, admin.B().Hget().Key(key).Field("n").Build()).ToString(); got != "10" {
		t.Errorf("HGET %s n = %q, want 10 (the aborted HINCRBY must not apply)", key, got)
	}
}

func TestPauseUnpause(t *testing.T) {
	c := srv.AdminClient(t)
	pingWithin := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		return c.Do(ctx, c.B().Ping().Build()).Error()
	}
	if err := pingWithin(5 * time.Second); err != nil {
		t.Fatalf("PING before pause: %v", err)
	}

	if err := srv.Pause(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	paused := true
	t.Cleanup(func() { // leave the shared server running even if the test fails
		if paused {
			_ = srv.Unpause(context.Background())
		}
	})
	if err := pingWithin(300 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("PING while paused: got %v, want %v", err, context.DeadlineExceeded)
	}

	if err := srv.Unpause(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	paused = false
	if err := pingWithin(5 * time.Second); err != nil {
		t.Errorf("PING after unpause: %v", err)
	}
}

func TestRestart(t *testing.T) {
	t.Setenv("HOPPER_TEST_ACL", "1")
	ctx := ctxFor(t, 30*time.Second)
	admin := srv.AdminClient(t)
	c := srv.Client(t) // creates the ACL user, which the restart wipes
	key := "hopper:{" + redistest.BuildID(t) + "}:k"
	if err := admin.Do(ctx, admin.B().Set().Key(key).Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr()

	start := time.Now()
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart took %v", time.Since(start))
	if srv.Addr() != addr {
		t.Errorf("Addr() after restart = %s, want %s (the port is pinned)", srv.Addr(), addr)
	}

	// The clients made before reconnect by themselves; the data is gone.
	// Commands may fail while the old connections are found dead.
	var err error
	for range 50 {
		if err = c.Do(ctx, c.B().Ping().Build()).Error(); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("PING as %s after restart: %v", redistest.MinimalUser, err)
	}
	for range 50 {
		if err = admin.Do(ctx, admin.B().Get().Key(key).Build()).Error(); err == nil || rueidis.IsRedisNil(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !rueidis.IsRedisNil(err) {
		t.Errorf("GET %s after restart: got %v, want nil (nothing persists)", key, err)
	}
}

func TestBuildID(t *testing.T) {
	t.Run("odd name/with {braces} and spaces", func(t *testing.T) {
		a, b := redistest.BuildID(t), redistest.BuildID(t)
		if a == b {
			t.Errorf("BuildID twice = %q both times, want distinct", a)
		}
		want := regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}-[0-9a-f]{16}$`)
		if !want.MatchString(a) {
			t.Errorf("BuildID = %q, want match %s", a, want)
		}
	})
}
