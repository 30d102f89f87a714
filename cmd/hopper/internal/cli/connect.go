package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// connect opens a client to t's Redis and checks that it answers. An
// unreachable server is one line and exit 2.
func (a *app) connect(t target) (rueidis.Client, error) {
	opt, err := redisOption(t.Redis, t.redisFrom)
	if err != nil {
		return nil, err
	}
	if err := applyTLS(&opt, t.TLS); err != nil {
		return nil, err
	}
	if opt.TLSConfig != nil && opt.TLSConfig.InsecureSkipVerify {
		// The flag, or rueidis's ?skip_verify=true: never silently.
		fmt.Fprintf(a.s.Stderr, "%s: %s\n", a.name, insecureWarning)
	}
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, unreachable(t, opt, err)
	}
	ctx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
	defer cancel()
	if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
		client.Close()
		return nil, unreachable(t, opt, err)
	}
	return client, nil
}

// announce is the first line of a command that reads a build another
// process runs: which build, on which Redis, and where that came from.
func (a *app) announce(t target) {
	fmt.Fprintf(a.s.Stderr, "%s: build %s on Redis %s\n", a.name, t.BuildID, t.redisShown())
}

// unreachable is connect's one line, naming the Redis and where it came
// from. Several addresses make rueidis insist on a cluster, and a lone
// server's refusal does not say that was the trouble.
func unreachable(t target, opt rueidis.ClientOption, err error) error {
	if reason := tlsReason(err); reason != "" {
		return exitf(exitInfrastructure, "cannot reach Redis at %s: TLS: %s", t.redisShown(), reason)
	}
	msg := redisAdvice(oneLine(err.Error()))
	switch {
	case len(opt.InitAddress) > 1 && strings.Contains(msg, "cluster support disabled"):
		msg += " (several addresses are the seeds of a Redis Cluster; give one address for a single server)"
	case opt.TLSConfig == nil && closedAtOnce(err):
		msg += " (a server that speaks TLS closes a plain connection at once: write rediss://)"
	}
	return exitf(exitInfrastructure, "cannot reach Redis at %s: %s", t.redisShown(), msg)
}

// closedAtOnce reports whether the server hung up on the first request, as
// a TLS-only server does with a client that does not speak TLS.
func closedAtOnce(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// redisOption reads the value of --redis, or of the variable from names,
// into a client's options. The forms:
//
//	redis://[USER:PASSWORD@]HOST:PORT[/DB][?OPTIONS]  one server (rediss:// for TLS)
//	redis://[USER:PASSWORD@]HOST:PORT,HOST:PORT,...   seeds of one Redis Cluster
//	redis://[USER:PASSWORD@]HOST:PORT?addr=HOST:PORT  the same, as rueidis.ParseURL writes it
//	HOST:PORT[,HOST:PORT...]                          as redis://
//	unix:///PATH                                      a socket
//
// A missing port is 6379. Several addresses are seeds: rueidis asks them for
// the slots and finds the rest of the cluster itself, so a few live nodes
// are enough. A single address may be a cluster node too; rueidis finds out.
// The command's clients never cache, whatever ?client_cache says.
func redisOption(raw, from string) (rueidis.ClientOption, error) {
	var opt rueidis.ClientOption
	shown := redact(raw)
	u := raw
	if !strings.Contains(u, "://") {
		u = "redis://" + u
	}
	scheme, rest, _ := strings.Cut(u, "://")
	switch scheme {
	case "redis", "rediss", "valkey", "valkeys":
	case "unix":
		return parsedRedisURL(u, shown, from)
	default:
		return opt, usagef("%s %q is not a Redis URL (redis://HOST:PORT): unknown scheme %q", from, shown, scheme)
	}

	userinfo, hosts, tail := splitAuthority(rest)
	list := strings.Split(hosts, ",")
	var seeds []string
	for i, h := range list {
		addr, err := seedAddr(h)
		if err != nil {
			if h == "" && len(list) > 1 {
				return opt, usagef("%s %q: address %d of %d is empty", from, shown, i+1, len(list))
			}
			return opt, usagef("%s %q: address %q %v", from, shown, h, err)
		}
		seeds = append(seeds, addr)
	}
	// rueidis reads the rest (credentials, TLS, /DB, ?OPTIONS) from a URL
	// of the first address alone: it cannot read a list.
	first := scheme + "://" + userinfo + list[0] + tail
	opt, err := parsedRedisURL(first, shown, from)
	if err != nil {
		return opt, err
	}
	if pu, err := url.Parse(first); err == nil {
		for _, h := range pu.Query()["addr"] {
			addr, err := seedAddr(h)
			if err != nil {
				return opt, usagef("%s %q: addr=%q %v", from, shown, h, err)
			}
			seeds = append(seeds, addr)
		}
	}
	opt.InitAddress = seeds
	if len(seeds) > 1 {
		if opt.SelectDB != 0 {
			return opt, usagef("%s %q: a Redis Cluster has only database 0, so several addresses take no /DB", from, shown)
		}
		if opt.TLSConfig != nil {
			// Each node is checked against its own name, not the first's.
			opt.TLSConfig.ServerName = ""
		}
	}
	return opt, nil
}

func parsedRedisURL(u, shown, from string) (rueidis.ClientOption, error) {
	opt, err := rueidis.ParseURL(u)
	if err != nil {
		return opt, usagef("%s %q is not a Redis URL (redis://HOST:PORT): %v", from, shown, err)
	}
	opt.DisableCache = true
	// CLIENT SETINFO only labels the connection, and the least privilege
	// hopper documents denies CLIENT: not sending it saves a refused
	// command per connection (docs/design.md#acl).
	opt.ClientSetInfo = rueidis.DisableClientSetInfo
	return opt, nil
}

// splitAuthority cuts what follows "scheme://" into the user part (with its
// "@", or ""), the addresses, and the rest (/DB, ?OPTIONS).
func splitAuthority(rest string) (userinfo, hosts, tail string) {
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	hosts, tail = rest[:end], rest[end:]
	if at := strings.LastIndex(hosts, "@"); at >= 0 {
		userinfo, hosts = hosts[:at+1], hosts[at+1:]
	}
	return userinfo, hosts, tail
}

// seedAddr checks one address of a list and writes it HOST:PORT, 6379 when
// the port is left out. Its error completes a sentence that names the
// address.
func seedAddr(s string) (string, error) {
	host, port := s, "6379"
	switch {
	case s == "":
		return "", errors.New("is empty")
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		host = s[1 : len(s)-1]
	case strings.Contains(s, ":"):
		var err error
		if host, port, err = net.SplitHostPort(s); err != nil {
			return "", errors.New("is not HOST:PORT")
		}
	}
	if host == "" {
		return "", errors.New("has no host")
	}
	if strings.ContainsAny(host, " \t/?#@[]") {
		return "", errors.New("is not HOST:PORT")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("has port %q, not a number from 1 to 65535", port)
	}
	return net.JoinHostPort(host, port), nil
}

// redact hides the password of a --redis value, in every form redisOption
// reads.
func redact(raw string) string {
	prefix, rest := "", raw
	if scheme, after, ok := strings.Cut(raw, "://"); ok {
		prefix, rest = scheme+"://", after
	}
	userinfo, hosts, tail := splitAuthority(rest)
	user, _, hasPassword := strings.Cut(strings.TrimSuffix(userinfo, "@"), ":")
	if !hasPassword {
		return raw
	}
	return prefix + user + ":xxxxx@" + hosts + tail
}
