package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

// BuildID returns a build id no other test uses: the test's name, reduced to
// [A-Za-z0-9_-] and at most 40 bytes, a dash, and 16 random hex digits. Tests
// sharing a server stay apart by keeping every key under their own build.
func BuildID(tb testing.TB) string {
	tb.Helper()
	name := strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_', r == '-':
			return r
		}
		return '-'
	}, tb.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return name + "-" + hex.EncodeToString(b[:])
}
