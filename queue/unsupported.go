package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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

// watchDropped tells a proxy that hangs up on WATCH (twemproxy closes the
// connection on a command it does not have) from a lost connection: after
// err, a connection lost before anything was sent for commit, it sends
// PING and then a lone WATCH, three times. PING answered and the WATCH's
// connection lost each time is ErrUnsupportedServer; anything else returns
// err as it was. Once a probe's WATCH is answered the Build never probes
// again, so an outage costs at most one probe.
func (b *Build) watchDropped(ctx context.Context, err error) error {
	if b.watchWorks.Load() || !isConnErr(ctx, err) {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var watch error
	for range 3 {
		if b.client.Do(pctx, b.client.B().Ping().Build()).Error() != nil {
			return err // the server itself is away
		}
		_ = b.client.Dedicated(func(c rueidis.DedicatedClient) error {
			res := c.DoMulti(pctx, c.B().Watch().Key(b.keys.Meta).Build(), c.B().Unwatch().Build())
			watch = res[0].Error()
			return nil
		})
		if watch == nil {
			b.watchWorks.Store(true)
			return err
		}
		if !isConnErr(pctx, watch) {
			return err
		}
	}
	return fmt.Errorf("%w: the connection closed on WATCH while PING was answered (%v); hopper needs WATCH, MULTI and EXEC on one connection, which proxies such as twemproxy do not give",
		ErrUnsupportedServer, watch)
}
