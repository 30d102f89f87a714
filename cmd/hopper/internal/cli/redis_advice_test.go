package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRedisAdvice: Redis's refusals become one line that says what to do,
// with no protocol text left, and what came before them kept (issue 43:
// a missing password gave the server's raw NOAUTH HELLO message).
func TestRedisAdvice(t *testing.T) {
	for reply, want := range map[string]string{
		"NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time": "the server wants a password: give it in the URL, redis://USER:PASSWORD@HOST:PORT (or :PASSWORD@ for the default user)",
		"NOAUTH Authentication required.":                                      "the server wants a password: give it in the URL, redis://USER:PASSWORD@HOST:PORT (or :PASSWORD@ for the default user)",
		"WRONGPASS invalid username-password pair or user is disabled.":        "the server refused the user name and password: check USER:PASSWORD in the URL (or the user is disabled)",
		"NOPERM User ci has no permissions to run the 'xadd' command":          "Redis user ci may not run XADD: add +xadd to its ACL (" + aclHint + ")",
		"NOPERM User ci has no permissions to run the 'xgroup|create' command": "Redis user ci may not run XGROUP CREATE: add +xgroup|create to its ACL (" + aclHint + ")",
		"NOPERM No permissions to access a key":                                "the Redis user may not use hopper's keys: its ACL needs ~hopper:* (" + aclHint + ")",
		"MOVED 3999 10.0.0.7:6381":                                             clusterAdvice(""),
		"CROSSSLOT Keys in request don't hash to the same slot":                clusterAdvice(""),
	} {
		got := redisAdvice("worker w.1: publishing build b: " + reply)
		assert.Equal(t, "worker w.1: publishing build b: "+want, got)
	}
	for _, plain := range []string{"dial tcp 127.0.0.1:1: connect: connection refused", "unit NOAUTHX failed", "REMOVED file"} {
		assert.Equal(t, plain, redisAdvice(plain))
	}
}
