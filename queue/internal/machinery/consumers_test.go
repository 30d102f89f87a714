package machinery

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEagerConsumers(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		eager      bool
	}{
		{"redis 7.0", "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n", false},
		{"redis 7.2", "# Server\r\nredis_version:7.2.0\r\n", true},
		{"redis 8.0", "# Server\r\nredis_version:8.0.2\r\n", true},
		{"valkey 8.1", "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.1\r\n", true},
		{"redis 6.2", "redis_version:6.2.14\n", false},
		{"redis 10", "redis_version:10.0.0\n", true},
		{"no version", "# Clients\r\nconnected_clients:1\r\n", false},
		{"garbled version", "redis_version:x.y\r\n", false},
		{"major only", "redis_version:8\r\n", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.eager, eagerConsumers(tc.info))
		})
	}
}

// HELLO's version field, Redis's or Valkey's own.
func TestAtLeast72(t *testing.T) {
	for v, want := range map[string]bool{
		"7.0.15": false, "7.2.0": true, "8.0.2": true, "8.1.1": true, "6.2.14": false,
		"10.0.0": true, "7": false, "x.y": false, "": false, "7.10.1": true,
	} {
		assert.Equal(t, want, atLeast72(v), "version %q", v)
	}
}
