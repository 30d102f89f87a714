package redistest

import "strings"

// MinimalUser is the ACL user [Server.Client] and [Cluster.Client] connect
// as when HOPPER_TEST_ACL is set: the least privilege hopper needs,
// [MinimalACL]. Its password is its name.
const MinimalUser = "hopper-minimal"

// NoScriptUser is the former name of [MinimalUser], which is denied every
// scripting command and more.
const NoScriptUser = MinimalUser

// MinimalACL is the rule list of [MinimalUser] after its name and password:
// the keys of hopper's builds (hopper:{<build>}:...) and, of all commands,
// only those hopper and rueidis send. Scripting, admin and dangerous
// commands, INFO, CLIENT, CONFIG, SCAN and KEYS are all denied, since
// -@all comes first. The README publishes the same list as its ACL SETUSER
// line, and a test checks that the two agree.
var MinimalACL = []string{
	"resetkeys", "~hopper:*", "resetchannels", "-@all",
	// connection: rueidis pings idle connections, a cluster client asks for
	// the slots and follows ASK (AUTH and HELLO need no rule: every user
	// may run them)
	"+ping", "+asking", "+cluster|slots", "+cluster|shards",
	// every transition: the server's clock and an optimistic transaction
	"+time", "+watch", "+unwatch", "+multi", "+exec",
	// strings, keys and hashes: leases, guards, meta, unit_state, workers
	// (HLEN counts them to size batches), the suites' timings
	"+get", "+set", "+del", "+exists", "+type", "+pexpire",
	"+hget", "+hmget", "+hset", "+hgetall", "+hincrby", "+hexists", "+hlen",
	// sorted sets: the worker guards' commit tokens
	"+zadd", "+zremrangebyscore", "+zscore",
	// streams: the units, the attempt log, the consumer group
	"+xadd", "+xrange", "+xreadgroup", "+xpending", "+xclaim", "+xack",
	"+xgroup|create", "+xgroup|createconsumer", "+xinfo|stream",
}

// MinimalACLLine is the ACL SETUSER command that creates user with password
// with [MinimalACL], as the README gives it.
func MinimalACLLine(user, password string) string {
	return "ACL SETUSER " + user + " on >" + password + " " + strings.Join(MinimalACL, " ")
}

// minimalRules is MinimalACL for MinimalUser, from a clean slate.
func minimalRules() []string {
	return append([]string{"reset", "on", ">" + MinimalUser}, MinimalACL...)
}
