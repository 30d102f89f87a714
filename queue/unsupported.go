package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
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
	if err == nil {
		return nil // before errors.As, whose target would escape on every commit
	}
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
// err, a connection lost before anything was sent for commit, it reads
// meta on a dedicated connection and then, on the same connection, sends a
// lone WATCH, three times. The read answered and the connection then closed
// by the other end on WATCH, each time, is ErrUnsupportedServer; anything
// else (the read unanswered: a node down or failing over) returns err as it
// was. Once a probe's WATCH is answered the Build never probes again, so an
// outage costs at most one probe.
func (e *core) watchDropped(ctx context.Context, err error) error {
	if e.watchWorks.Load() || !isConnErr(ctx, err) {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var watch error
	for range 3 {
		answered := false
		_ = e.client.Dedicated(func(c rueidis.DedicatedClient) error {
			if answered = c.Do(pctx, c.B().Exists().Key(e.schema.keys.Meta).Build()).Error() == nil; answered {
				res := c.DoMulti(pctx, c.B().Watch().Key(e.schema.keys.Meta).Build(), c.B().Unwatch().Build())
				watch = res[0].Error()
			}
			return nil
		})
		switch {
		case !answered:
			return err // the server itself is away
		case watch == nil:
			e.watchWorks.Store(true)
			return err
		case !hungUp(watch):
			return err
		}
	}
	return fmt.Errorf("%w: the connection closed on WATCH right after a read on it was answered (%v); hopper needs WATCH, MULTI and EXEC on one connection, which proxies such as twemproxy do not give",
		ErrUnsupportedServer, watch)
}

// hungUp reports whether err is a connection closed by the other end, not
// one that could not be made or timed out.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
