package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/report"
	"github.com/hopper-queue/hopper/worker"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aclUser is an ACL user of one test's own: redistest.MinimalACL and then
// extra, so that what the server logs as denied is this test's alone.
type aclUser struct {
	t     testing.TB
	admin rueidis.Client
	name  string
}

func newACLUser(t testing.TB, extra ...string) *aclUser {
	t.Helper()
	u := &aclUser{t: t, admin: srv.AdminClient(t), name: "acl-" + redistest.BuildID(t)}
	rules := append([]string{"reset", "on", ">" + u.name}, redistest.MinimalACL...)
	cmd := u.admin.B().AclSetuser().Username(u.name).Rule(append(rules, extra...)...).Build()
	require.NoError(t, u.admin.Do(context.Background(), cmd).Error())
	t.Cleanup(func() {
		_ = u.admin.Do(context.Background(), u.admin.B().AclDeluser().Username(u.name).Build()).Error()
	})
	return u
}

// clientFor is the client under test for keys outside hopper's own: with
// HOPPER_TEST_ACL set, it connects as a user of redistest.MinimalACL that is
// granted the key patterns too.
func clientFor(t testing.TB, patterns ...string) rueidis.Client {
	t.Helper()
	if os.Getenv("HOPPER_TEST_ACL") == "" {
		return srv.Client(t)
	}
	return newACLUser(t, patterns...).client(rueidis.ClientOption{})
}

// client connects as the user, with opt's other settings.
func (u *aclUser) client(opt rueidis.ClientOption) rueidis.Client {
	u.t.Helper()
	opt.InitAddress, opt.DisableCache = []string{srv.Addr()}, true
	opt.Username, opt.Password = u.name, u.name
	c, err := rueidis.NewClient(opt)
	require.NoError(u.t, err)
	u.t.Cleanup(c.Close)
	return c
}

// denied lists what the server refused the user, from ACL LOG, as
// "reason object" (for example "command info"), each once, sorted.
func (u *aclUser) denied() []string {
	u.t.Helper()
	entries, err := u.admin.Do(context.Background(), u.admin.B().AclLog().Count(1000).Build()).ToArray()
	require.NoError(u.t, err)
	var out []string
	for _, e := range entries {
		m, err := e.AsStrMap()
		require.NoError(u.t, err)
		if m["username"] == u.name {
			out = append(out, m["reason"]+" "+m["object"])
		}
	}
	sort.Strings(out)
	return out
}

// A whole build (publish, reserve with its reclaim, heartbeat, finalize,
// report) as the minimal user is refused nothing: in particular the server
// version comes from HELLO, not from INFO, which the user is denied.
func TestBuildAsMinimalUserIsDeniedNothing(t *testing.T) {
	u := newACLUser(t)
	// Without this, rueidis labels each connection with CLIENT SETINFO
	// (Redis 7.2 and later), which the user is denied, and ignores the
	// refusal; docs/redis.md tells library callers to set it too.
	c := u.client(rueidis.ClientOption{ClientSetInfo: rueidis.DisableClientSetInfo})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.ErrorContains(t, c.Do(ctx, c.B().Info().Build()).Error(), "NOPERM", "the user must be denied INFO")
	u.admin.Do(ctx, u.admin.B().AclLog().Reset().Build())

	id := redistest.BuildID(t)
	suite := worker.Suite{Units: units(6), UnitType: "package", Command: "go test {unit}"}
	errs := make(chan error, 2)
	for i := range 2 {
		cfg := worker.Config{BuildID: id, WorkerID: fmt.Sprintf("ci-%d", i+1), Timeout: 2 * time.Second,
			InitTimeout: 10 * time.Second, Block: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond,
			Output: io.Discard, Log: io.Discard}
		go func() { errs <- worker.Run(ctx, c, suite, cfg, passWith) }()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	r, err := report.Run(ctx, c, id, report.Options{PollInterval: 20 * time.Millisecond, Timeout: 10 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, report.VerdictPassed, r.Verdict)
	assert.Empty(t, u.denied(), "commands or keys the minimal user was denied")
}

// On a server that knows neither a bare HELLO nor INFO (a proxy, a
// compatible server), a reclaim still works: the consumer creation of the
// older servers is assumed, each command is tried once per build, and
// neither refusal is an error.
func TestReclaimWithoutHelloOrInfo(t *testing.T) {
	p := newRefusingProxy(t, srv.Addr(), func(cmd []string) bool {
		name := strings.ToUpper(cmd[0])
		return name == "HELLO" && len(cmd) == 1 || name == "INFO"
	})
	e := newEnv(t)
	e.publish([]string{"u1"}, nil)
	b, err := queue.OpenKeys(p.client(t), e.keys, queue.Options{TTL: ttlMS * time.Millisecond})
	require.NoError(t, err)
	for range 3 {
		got, err := b.Reclaim(e.ctx, "w1", time.Minute, 3)
		require.NoError(t, err)
		assert.Equal(t, queue.ReclaimNone, got.Status)
	}
	assert.Equal(t, []string{"HELLO", "INFO"}, p.refusals())
}
