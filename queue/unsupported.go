package queue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"
)

// ErrUnsupportedServer: the server, or a proxy in front of it, does not
// have a command every transition needs: WATCH, MULTI and EXEC on one
// connection (docs/design.md#watch). Proxies that spread commands over
// pooled connections (twemproxy, Envoy's Redis proxy) refuse WATCH. Nothing
// was written, and trying again cannot help.
var ErrUnsupportedServer = errors.New("queue: the server cannot run hopper's transactions")

// refusedCommand turns a server's "unknown command" (Redis, most proxies)
// or "unsupported command" (Envoy) reply into ErrUnsupportedServer naming
// the command; any other error is returned as it is. A transition's first
// round trip starts with WATCH, and an attempt stops at the first error, so
// such a server is found on the first transaction, before MULTI could run
// its writes outside a transaction.
func refusedCommand(err error) error {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	lower := strings.ToLower(msg)
	if !strings.Contains(lower, "unknown command") && !strings.Contains(lower, "unsupported command") {
		return err
	}
	name := "a command"
	if _, rest, ok := strings.Cut(msg, "'"); ok {
		if cmd, _, ok := strings.Cut(rest, "'"); ok && cmd != "" {
			name = strings.ToUpper(cmd)
		}
	}
	return fmt.Errorf("%w: it does not run %s (%q); hopper needs WATCH, MULTI and EXEC on one connection, which proxies such as twemproxy and Envoy's Redis proxy do not give",
		ErrUnsupportedServer, name, strings.TrimSpace(msg))
}
