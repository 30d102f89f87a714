package cli

import (
	"context"
	"net/url"
	"strings"
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
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, exitf(exitInfrastructure, "cannot reach Redis at %s: %s", redact(t.Redis), oneLine(err.Error()))
	}
	ctx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
	defer cancel()
	if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
		client.Close()
		return nil, exitf(exitInfrastructure, "cannot reach Redis at %s: %s", redact(t.Redis), oneLine(err.Error()))
	}
	return client, nil
}

// redact hides a URL's password.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if !strings.Contains(raw, "@") {
			return raw
		}
		return "(URL with credentials)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
