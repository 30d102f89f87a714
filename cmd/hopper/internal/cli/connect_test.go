package cli

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every form of --redis the help lists, read into the client's options.
func TestRedisOptionForms(t *testing.T) {
	for _, tc := range []struct {
		raw        string
		addrs      []string
		user, pass string
		db         int
		tls        string // the TLS server name; "-" for no TLS
	}{
		{"redis://127.0.0.1:6379", []string{"127.0.0.1:6379"}, "", "", 0, "-"},
		{"127.0.0.1:7000", []string{"127.0.0.1:7000"}, "", "", 0, "-"},
		{"redis://cache", []string{"cache:6379"}, "", "", 0, "-"},
		{"redis://u:p@h:1/3", []string{"h:1"}, "u", "p", 3, "-"},
		{"redis://:secret@h:1?db=2", []string{"h:1"}, "", "secret", 2, "-"},
		{"rediss://h:1", []string{"h:1"}, "", "", 0, "h"},
		{"redis://[::1]:7000", []string{"[::1]:7000"}, "", "", 0, "-"},
		{"redis://[::1]", []string{"[::1]:6379"}, "", "", 0, "-"},

		{"redis://a:7000,b:7001,c:7002", []string{"a:7000", "b:7001", "c:7002"}, "", "", 0, "-"},
		{"a:7000,b:7001", []string{"a:7000", "b:7001"}, "", "", 0, "-"},
		{"redis://u:p@10.0.0.1:7000,10.0.0.2,[fd00::3]:7002", []string{"10.0.0.1:7000", "10.0.0.2:6379", "[fd00::3]:7002"}, "u", "p", 0, "-"},
		{"redis://u:p@a:7000,b:7001/0?client_name=ci", []string{"a:7000", "b:7001"}, "u", "p", 0, "-"},
		{"redis://u:p@a:7000?addr=b:7001&addr=c", []string{"a:7000", "b:7001", "c:6379"}, "u", "p", 0, "-"},
		{"redis://a:7000,b:7001?addr=c:7002", []string{"a:7000", "b:7001", "c:7002"}, "", "", 0, "-"},
		{"rediss://a:7000,b:7001", []string{"a:7000", "b:7001"}, "", "", 0, ""},
		{"valkey://a:1,b:2", []string{"a:1", "b:2"}, "", "", 0, "-"},
		{"unix:///run/redis.sock", []string{"/run/redis.sock"}, "", "", 0, "-"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			opt, err := redisOption(tc.raw, "--redis")
			require.NoError(t, err)
			assert.Equal(t, tc.addrs, opt.InitAddress)
			assert.Equal(t, tc.user, opt.Username)
			assert.Equal(t, tc.pass, opt.Password)
			assert.Equal(t, tc.db, opt.SelectDB)
			assert.True(t, opt.DisableCache, "the command's clients never cache")
			assert.Equal(t, rueidis.DisableClientSetInfo, opt.ClientSetInfo, "nor label their connections")
			if tc.tls == "-" {
				assert.Nil(t, opt.TLSConfig)
			} else {
				require.NotNil(t, opt.TLSConfig)
				assert.Equal(t, tc.tls, opt.TLSConfig.ServerName, "with several seeds, each is checked against its own name")
			}
		})
	}
}

// A bad --redis is a usage error that names the value (its password
// hidden) and, in a list, the address at fault.
func TestRedisOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{"ftp://x", `--redis "ftp://x" is not a Redis URL (redis://HOST:PORT): unknown scheme "ftp"`},
		{"http://[::1", `--redis "http://[::1" is not a Redis URL (redis://HOST:PORT): unknown scheme "http"`},
		{"redis://", `--redis "redis://": address "" is empty`},
		{"redis://u:secret@", `--redis "redis://u:xxxxx@": address "" is empty`},
		{"redis://:6379", `--redis "redis://:6379": address ":6379" has no host`},
		{"h:0", `--redis "h:0": address "h:0" has port "0", not a number from 1 to 65535`},
		{"h:65536", `--redis "h:65536": address "h:65536" has port "65536", not a number from 1 to 65535`},
		{"redis://h:port", `--redis "redis://h:port": address "h:port" has port "port", not a number from 1 to 65535`},
		{"::1", `--redis "::1": address "::1" is not HOST:PORT`},
		{"redis://[::1", `--redis "redis://[::1": address "[::1" is not HOST:PORT`},
		{"redis://a:1,b:x", `--redis "redis://a:1,b:x": address "b:x" has port "x", not a number from 1 to 65535`},
		{"redis://a:1,,b:2", `--redis "redis://a:1,,b:2": address 2 of 3 is empty`},
		{"a:1,b:2,", `--redis "a:1,b:2,": address 3 of 3 is empty`},
		{"redis://u:secret@a:1,b:2:3", `--redis "redis://u:xxxxx@a:1,b:2:3": address "b:2:3" is not HOST:PORT`},
		{"redis://a:1, b:2", `--redis "redis://a:1, b:2": address " b:2" is not HOST:PORT`},
		{"redis://a:1?addr=b:0", `--redis "redis://a:1?addr=b:0": addr="b:0" has port "0", not a number from 1 to 65535`},
		{"redis://a:1?addr=", `--redis "redis://a:1?addr=": addr="" is empty`},
		{"redis://a:1,b:2/1", `--redis "redis://a:1,b:2/1": a Redis Cluster has only database 0, so several addresses take no /DB`},
		{"redis://a:1?addr=b:2&db=4", `--redis "redis://a:1?addr=b:2&db=4": a Redis Cluster has only database 0`},
		{"redis://a:1/x", `--redis "redis://a:1/x" is not a Redis URL (redis://HOST:PORT): redis: invalid database number: "x"`},
		{"redis://a:1,b:2/x", `--redis "redis://a:1,b:2/x" is not a Redis URL (redis://HOST:PORT): redis: invalid database number: "x"`},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			_, err := redisOption(tc.raw, "--redis")
			require.Error(t, err)
			var ue usageError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "secret")
		})
	}
	_, err := redisOption("a:1,,b", "HOPPER_REDIS_URL")
	require.Error(t, err)
	assert.Equal(t, `HOPPER_REDIS_URL "a:1,,b": address 2 of 3 is empty`, err.Error())
}

// The variables take the same forms as --redis, and a bad one is named.
func TestRedisSeedsFromEnvironment(t *testing.T) {
	o, _, _, err := parseWork(t, Env{"REDIS_URL": "redis://u:p@a:7000,b:7001,c:7002"}, "--build", "b", "--", "x")
	require.NoError(t, err)
	assert.Equal(t, "redis://u:p@a:7000,b:7001,c:7002", o.Redis)
	assert.Equal(t, "REDIS_URL", o.redisFrom)
	opt, err := redisOption(o.Redis, o.redisFrom)
	require.NoError(t, err)
	assert.Equal(t, []string{"a:7000", "b:7001", "c:7002"}, opt.InitAddress)

	_, _, _, err = parseWork(t, Env{"HOPPER_REDIS_URL": "a:7000,b", "REDIS_URL": "a:1,b:x"}, "--build", "b", "--", "x")
	require.NoError(t, err, "HOPPER_REDIS_URL wins; REDIS_URL is not read")
	_, _, _, err = parseWork(t, Env{"REDIS_URL": "a:1,b:x"}, "--build", "b", "--", "x")
	require.Error(t, err)
	assert.Equal(t, `REDIS_URL "a:1,b:x": address "b:x" has port "x", not a number from 1 to 65535`, err.Error())
}

func TestRedact(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://:secret@h:1":                    "redis://:xxxxx@h:1",
		"redis://u:secret@h:1/2":                 "redis://u:xxxxx@h:1/2",
		"redis://h:1":                            "redis://h:1",
		"h:1":                                    "h:1",
		"redis://u@h:1":                          "redis://u@h:1",
		"redis://u:secret@a:1,b:2,c:3":           "redis://u:xxxxx@a:1,b:2,c:3",
		"redis://u:secret@a:1?addr=b:2&addr=c:3": "redis://u:xxxxx@a:1?addr=b:2&addr=c:3",
		"u:secret@a:1,b:2":                       "u:xxxxx@a:1,b:2",
		"rediss://u:p@ss@h:1":                    "rediss://u:xxxxx@h:1",
	} {
		assert.Equal(t, want, redact(raw), raw)
		assert.NotContains(t, redact(raw), "secret")
	}
}

// Several seeds that turn out to be one server that is no cluster: the
// line says why the address was not good enough.
func TestUnreachableHint(t *testing.T) {
	opt, err := redisOption("a:1,b:2", "--redis")
	require.NoError(t, err)
	err = unreachable(target{Redis: "a:1,b:2", redisFrom: "--redis"}, opt, errString("This instance has cluster support disabled"))
	assert.Equal(t, "cannot reach Redis at a:1,b:2 (from --redis): This instance has cluster support disabled (several addresses are the seeds of a Redis Cluster; give one address for a single server)", err.Error())
	opt, err = redisOption("a:1", "--redis")
	require.NoError(t, err)
	err = unreachable(target{Redis: "a:1", redisFrom: "REDIS_URL"}, opt, errString("dial tcp a:1: connection refused"))
	assert.Equal(t, "cannot reach Redis at a:1 (from REDIS_URL): dial tcp a:1: connection refused", err.Error())
	assert.False(t, strings.Contains(err.Error(), "seeds"))
}

type errString string

func (e errString) Error() string { return string(e) }
