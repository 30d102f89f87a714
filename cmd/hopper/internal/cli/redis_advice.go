package cli

import (
	"regexp"
	"strings"
)

// Redis refuses some requests with a reply its user can act on, but in the
// server's words (NOAUTH, WRONGPASS, NOPERM, MOVED, CROSSSLOT), which name
// neither the URL part nor the ACL rule to change. redisAdvice rewrites such
// a message: what came before the reply (which command, which worker) is
// kept, the reply is replaced by what to do.

var (
	deniedCommand = regexp.MustCompile(`'([^']+)' command`)
	deniedUser    = regexp.MustCompile(`User (\S+) has no permissions`)
)

// aclHint says where the full rule list is.
const aclHint = "the README's ACL line lists every command hopper needs"

// redisAdvice returns msg with its Redis reply, if it holds one of those
// above, replaced by advice; else msg unchanged.
func redisAdvice(msg string) string {
	for _, r := range []struct {
		reply  string
		advice func(reply string) string
	}{
		{"NOAUTH", func(string) string {
			return "the server wants a password: give it in the URL, redis://USER:PASSWORD@HOST:PORT (or :PASSWORD@ for the default user)"
		}},
		{"WRONGPASS", func(string) string {
			return "the server refused the user name and password: check USER:PASSWORD in the URL (or the user is disabled)"
		}},
		{"NOPERM", noPermAdvice},
		{"MOVED", clusterAdvice},
		{"CROSSSLOT", clusterAdvice},
	} {
		if i := replyAt(msg, r.reply); i >= 0 {
			return msg[:i] + r.advice(msg[i:])
		}
	}
	return msg
}

// replyAt finds reply as a word of msg (the start of the server's reply),
// or -1.
func replyAt(msg, reply string) int {
	for from := 0; ; {
		i := strings.Index(msg[from:], reply)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(reply)
		if (i == 0 || !isWordByte(msg[i-1])) && (end == len(msg) || msg[end] == ' ') {
			return i
		}
		from = end
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9'
}

// noPermAdvice names the user and the command, or the keys, denied.
func noPermAdvice(reply string) string {
	user := "the Redis user"
	if m := deniedUser.FindStringSubmatch(reply); m != nil {
		user = "Redis user " + m[1]
	}
	if m := deniedCommand.FindStringSubmatch(reply); m != nil {
		cmd := strings.ToLower(m[1])
		return user + " may not run " + strings.ToUpper(strings.ReplaceAll(cmd, "|", " ")) +
			": add +" + cmd + " to its ACL (" + aclHint + ")"
	}
	if strings.Contains(reply, "key") {
		return user + " may not use hopper's keys: its ACL needs ~hopper:* (" + aclHint + ")"
	}
	return user + " lacks a permission hopper needs (" + aclHint + ")"
}

// clusterAdvice: a redirection reaches hopper only when a cluster node was
// taken for a single server, through a proxy's or load balancer's address,
// or because the user may not ask for the cluster's slots.
func clusterAdvice(string) string {
	return "the server is a Redis Cluster node reached as a single server: give the cluster's nodes, redis://HOST:PORT,HOST:PORT, not a proxy's address, and let the user run CLUSTER SLOTS and CLUSTER SHARDS (+cluster|slots +cluster|shards)"
}
