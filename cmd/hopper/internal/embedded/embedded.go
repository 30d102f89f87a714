// Package embedded runs the Redis-compatible server `hopper run` uses when no
// Redis is given: github.com/alicebob/miniredis/v2, in this process, on a
// loopback port, so that the one-machine main job needs nothing installed.
//
// miniredis implements every command the queue sends (WATCH/MULTI/EXEC,
// the stream and consumer-group commands, hashes, TIME, expiries). Its
// XCLAIM ... JUSTID adds one to the entry's delivery count, where Redis
// leaves the count alone; the queue's heartbeat states the count with
// RETRYCOUNT as well, so it holds on both.
//
// Keys expire on the wall clock, as in Redis (miniredis's ClockTTL).
//
// It stays internal to the command: a Go program that wants a build on
// one machine without Redis can start miniredis itself in three lines
// (NewMiniRedis, ClockTTL, StartAddr) and hand its address to
// rueidis.NewClient, and hopper would otherwise have to keep this thin
// wrapper stable as library API, and tie the library's users to
// miniredis's version.
package embedded

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// Server is one embedded server. It is safe for concurrent use; Close it
// when done.
type Server struct {
	m *miniredis.Miniredis
}

// Start runs a server on 127.0.0.1 at a free port.
func Start() (*Server, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	return &Server{m: m}, nil
}

// Addr is the server's "127.0.0.1:port".
func (s *Server) Addr() string { return s.m.Addr() }

// URL is the server's address as a redis:// URL, for --redis.
func (s *Server) URL() string { return "redis://" + s.m.Addr() }

// Close stops the server and drops every connection and key.
func (s *Server) Close() { s.m.Close() }
