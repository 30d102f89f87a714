package cli

import (
	"context"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// A command hopper sends inside MULTI that the user's ACL denies is refused
// when queued, and the transaction then fails as a whole: EXEC answers
// EXECABORT, which names no command. deniedInTransactions finds the denied
// ones by queueing each in a transaction of its own making that cannot run
// (it ends with a command of the wrong arity), so nothing is ever written.

// probeKey is in hopper's key space, so that an ACL limited to ~hopper:*
// lets it through as it lets the builds' keys.
const probeKey = "hopper:{acl-probe}:k"

// transactionWrites are the commands hopper's transactions queue, with
// arguments of the right arity.
var transactionWrites = [][]string{
	{"SET", probeKey, "v"}, {"DEL", probeKey}, {"PEXPIRE", probeKey, "1"},
	{"HSET", probeKey, "f", "v"}, {"HINCRBY", probeKey, "f", "1"},
	{"ZADD", probeKey, "1", "m"}, {"ZREMRANGEBYSCORE", probeKey, "0", "1"},
	{"XADD", probeKey, "*", "f", "v"}, {"XACK", probeKey, "g", "0-1"},
	{"XCLAIM", probeKey, "g", "c", "0", "0-1"},
	{"XGROUP", "CREATE", probeKey, "g", "$", "MKSTREAM"},
	{"XGROUP", "CREATECONSUMER", probeKey, "g", "c"},
}

// deniedInTransactions returns the NOPERM replies to queueing each of
// transactionWrites, the first for each command.
func deniedInTransactions(ctx context.Context, client rueidis.Client) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var denied []string
	err := client.Dedicated(func(c rueidis.DedicatedClient) error {
		// Outside a transaction the writes would run: nothing is queued
		// unless MULTI was.
		if err := c.Do(ctx, c.B().Multi().Build()).Error(); err != nil {
			denied = append(denied, err.Error())
			return nil
		}
		var cmds rueidis.Commands
		for _, w := range transactionWrites {
			cmds = append(cmds, c.B().Arbitrary(w[0]).Args(w[1:]...).Build())
		}
		// GET with no key: refused when queued, so EXEC runs nothing.
		cmds = append(cmds, c.B().Arbitrary("GET").Build(), c.B().Exec().Build())
		for _, r := range c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil && strings.HasPrefix(err.Error(), "NOPERM") {
				denied = append(denied, err.Error())
			}
		}
		return nil
	})
	if err != nil || len(denied) > 0 && !strings.HasPrefix(denied[0], "NOPERM") {
		return nil
	}
	return denied
}

// explainAbort completes msg, when an aborted transaction is what it
// reports, with the commands t's user may not queue.
func (a *app) explainAbort(client rueidis.Client, t target, msg string) string {
	if !strings.Contains(msg, "EXECABORT") {
		return msg
	}
	i := strings.Index(msg, "EXECABORT")
	denied := deniedInTransactions(context.WithoutCancel(a.ctx), client)
	if len(denied) == 0 {
		return msg[:i] + "Redis refused a command of a transaction (EXECABORT)"
	}
	advice := make([]string, len(denied))
	user := "default"
	if opt, err := redisOption(t.Redis, t.redisFrom); err == nil && opt.Username != "" {
		user = opt.Username
	}
	for j, d := range denied {
		advice[j] = strings.Replace(redisAdvice(d), "the Redis user", "Redis user "+user, 1)
	}
	return msg[:i] + strings.Join(advice, "; ")
}
