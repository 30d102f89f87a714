package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneLineWithout checks a refusal: exit 2, one line on stderr, and none of
// the server's protocol words.
func oneLineWithout(t *testing.T, code int, errs string, protocol ...string) {
	t.Helper()
	assert.Equal(t, 2, code, errs)
	assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
	for _, p := range protocol {
		assert.NotContains(t, errs, p)
	}
}

// TestRefusedPasswordSaysWhatToDo: a server that wants a password, given
// none or a wrong one, is one line saying what to put in the URL (issue
// 43: the server's raw NOAUTH HELLO message was printed).
func TestRefusedPasswordSaysWhatToDo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := redistest.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Terminate(context.Background()) })
	admin := s.AdminClient(t)
	require.NoError(t, admin.Do(ctx, admin.B().AclSetuser().Username("default").Rule("resetpass", ">s3cret").Build()).Error())

	code, _, errs := hopper(t, t.TempDir(), baseEnv(), "report", "--build", "b", "--redis", "redis://"+s.Addr())
	oneLineWithout(t, code, errs, "NOAUTH", "HELLO")
	assert.Equal(t, "hopper report: cannot reach Redis at redis://"+s.Addr()+" (from --redis): the server wants a password: give it in the URL, redis://USER:PASSWORD@HOST:PORT (or :PASSWORD@ for the default user)\n", errs)

	url := "redis://default:wrong@" + s.Addr()
	code, _, errs = hopper(t, t.TempDir(), baseEnv("REDIS_URL="+url), "status", "--build", "b", "--once")
	oneLineWithout(t, code, errs, "WRONGPASS", "wrong")
	assert.Equal(t, "hopper status: cannot reach Redis at redis://default:xxxxx@"+s.Addr()+" (from REDIS_URL): the server refused the user name and password: check USER:PASSWORD in the URL (or the user is disabled)\n", errs)
}

// TestDeniedCommandNamesIt: an ACL user denied a command hopper needs gets
// one line naming the user and the command, and the rule to add.
func TestDeniedCommandNamesIt(t *testing.T) {
	ctx := context.Background()
	admin := srv.AdminClient(t)
	user := "h43-no-xadd"
	rules := append([]string{"reset", "on", ">" + user}, slices.DeleteFunc(slices.Clone(redistest.MinimalACL), func(r string) bool { return r == "+xadd" })...)
	require.NoError(t, admin.Do(ctx, admin.B().AclSetuser().Username(user).Rule(rules...).Build()).Error())
	t.Cleanup(func() { _ = admin.Do(ctx, admin.B().AclDeluser().Username(user).Build()).Error() })

	url := fmt.Sprintf("redis://%s:%s@%s", user, user, srv.Addr())
	dir := fixture(t, map[string]string{"a.sh": "true"})
	code, _, errs := hopper(t, dir, baseEnv(), "work", "--build", redistest.BuildID(t), "--redis", url, "--progress", "off", "--init-timeout", "5", "a.sh", "--", "sh", "{unit}")
	assert.Equal(t, 2, code, errs)
	assert.NotContains(t, errs, "NOPERM")
	assert.Contains(t, errs, "Redis user "+user+" may not run XADD: add +xadd to its ACL (the README's ACL line lists every command hopper needs)")
}

// TestPlainURLToATLSServer: redis:// to a server that speaks TLS alone says
// to write rediss://.
func TestPlainURLToATLSServer(t *testing.T) {
	url, _ := tlsServer(t, false)
	plain := "redis://" + strings.TrimPrefix(url, "rediss://")
	code, _, errs := hopper(t, t.TempDir(), baseEnv(), "report", "--build", "b", "--redis", plain)
	assert.Equal(t, 2, code, errs)
	assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
	assert.Contains(t, errs, "(a server that speaks TLS closes a plain connection at once: write rediss://)")
}

// TestDeniedReadNamesIt: the report of a user denied a read it needs says
// which command to allow, beside its verdict.
func TestDeniedReadNamesIt(t *testing.T) {
	ctx := context.Background()
	admin := srv.AdminClient(t)
	user := "h43-no-hgetall"
	rules := append([]string{"reset", "on", ">" + user}, slices.DeleteFunc(slices.Clone(redistest.MinimalACL), func(r string) bool { return r == "+hgetall" })...)
	require.NoError(t, admin.Do(ctx, admin.B().AclSetuser().Username(user).Rule(rules...).Build()).Error())
	t.Cleanup(func() { _ = admin.Do(ctx, admin.B().AclDeluser().Username(user).Build()).Error() })

	url := fmt.Sprintf("redis://%s:%s@%s", user, user, srv.Addr())
	code, _, errs := hopper(t, t.TempDir(), baseEnv(), "report", "--build", redistest.BuildID(t), "--redis", url, "--init-timeout", "1")
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "may not run HGETALL: add +hgetall to its ACL")
}
